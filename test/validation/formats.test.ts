import t from 'tap'
import { isIsoDateTimeWithZone } from '../../src/validation/formats.js'

// Each case sits on one edge of the grammar or of a field's range, so a
// mutant that moves an edge (a bound, an anchor, an optional group) flips one.

t.test('every zone form the devices send is accepted; a time without a zone is not', async t => {
  for (const s of [
    '2026-11-23T07:17:46Z', '2026-11-23T07:17:46z', '2026-11-23T07:17:46+02', '2026-11-23T07:17:46+0200',
    '2026-11-23T07:17:46+02:00', '2026-11-23T07:17:46-05:30', '2026-11-23T07:17Z', '2026-11-23T07:17+01:00',
    '2026-11-23T07:17:46.123Z', '2026-11-23T07:17:46,5Z', '2026-11-23T07:17:46.123456789-00:00'
  ]) t.ok(isIsoDateTimeWithZone(s), s)
  for (const s of ['2026-11-23T07:17:46', '2026-11-23T07:17', '2026-11-23T07:17:46.5', '2026-11-23']) {
    t.notOk(isIsoDateTimeWithZone(s), `${s}: no zone`)
  }
})

t.test('the grammar is anchored and every field has its exact number of digits', async t => {
  for (const s of [
    ' 2026-11-23T07:17:46Z', '2026-11-23T07:17:46Z ', 'x2026-11-23T07:17:46Z', '2026-11-23T07:17:46Zx',
    '02026-11-23T07:17:46Z', '2026-011-23T07:17:46Z', '2026-11-023T07:17:46Z', '2026-11-23T007:17:46Z',
    '2026-11-23T07:017:46Z', '2026-11-23T07:17:046Z', '2026-1-23T07:17:46Z', '2026-11-3T07:17:46Z',
    '2026-11-23T7:17:46Z', '2026-11-23T07:7:46Z', '2026-11-23T07:17:6Z', '2026-11-23T07:17:46+2',
    '2026-11-23T07:17:46+020', '2026-11-23T07:17:46+02:0', '2026-11-23T07:17:46+002:00', '2026-11-23T07:17:46+02:000',
    '2026-11-23 07:17:46Z', '2026-11-23t07:17:46Z', '2026/11/23T07:17:46Z', '2026-11-23T07-17-46Z',
    '2026-11-23T07:17:46.Z', '2026-11-23T07:17.5Z', '2026-11-23T07:17:46.5.5Z', '2026-11-23T07:17:46ZZ',
    '2026-11-23T07:17:46Z+02:00', '2026-11-23T07:17:46*02:00', '2026-11-23T07:17:46;5Z', 'abcd-ef-ghTij:kl:mnZ', ''
  ]) t.notOk(isIsoDateTimeWithZone(s), JSON.stringify(s))
})

t.test('each field is range-checked at both ends', async t => {
  const at = (date: string, time = '12:30:30', zone = 'Z'): boolean => isIsoDateTimeWithZone(`${date}T${time}${zone}`)
  t.ok(at('2026-01-15'), 'month 1')
  t.ok(at('2026-12-15'), 'month 12')
  t.notOk(at('2026-00-15'), 'month 0')
  t.notOk(at('2026-13-15'), 'month 13')
  t.ok(at('2026-11-01'), 'day 1')
  t.notOk(at('2026-11-00'), 'day 0')
  t.ok(at('2026-11-23', '00:00:00'), 'midnight')
  t.ok(at('2026-11-23', '23:59:59'), 'the last second')
  t.notOk(at('2026-11-23', '24:00:00'), 'hour 24')
  t.notOk(at('2026-11-23', '12:60:00'), 'minute 60')
  t.ok(at('2026-12-31', '23:59:60'), 'a leap second')
  t.notOk(at('2026-11-23', '12:30:61'), 'second 61')
  t.ok(at('2026-11-23', '12:30:30', '+23:59'), 'offset +23:59')
  t.ok(at('2026-11-23', '12:30:30', '-23'), 'offset -23')
  t.notOk(at('2026-11-23', '12:30:30', '+24:00'), 'offset hour 24')
  t.notOk(at('2026-11-23', '12:30:30', '-24'), 'offset hour 24, no minutes')
  t.notOk(at('2026-11-23', '12:30:30', '+02:60'), 'offset minute 60')
  t.notOk(at('2026-11-23', '12:30:30', '+0260'), 'offset minute 60, basic form')
})

t.test('the day is checked against its month and leap year', async t => {
  const day = (d: string): boolean => isIsoDateTimeWithZone(`${d}T00:00:00Z`)
  for (const [month, last] of [['01', 31], ['02', 28], ['03', 31], ['04', 30], ['06', 30], ['09', 30], ['11', 30], ['12', 31]] as const) {
    t.ok(day(`2026-${month}-${last}`), `2026-${month}-${last}`)
    t.notOk(day(`2026-${month}-${last + 1}`), `2026-${month}-${last + 1}`)
  }
  t.ok(day('2024-02-29'), 'a leap year')
  t.notOk(day('2024-02-30'), 'a leap year has no 30 February')
  t.ok(day('2000-02-29'), 'a year divisible by 400 is leap')
  t.notOk(day('2100-02-29'), 'a century year is not leap')
})
