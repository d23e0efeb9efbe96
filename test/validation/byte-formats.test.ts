import t from 'tap'
import { BYTE_FORMATS, isCommonDateTime } from '../../src/validation/byte-formats.js'
import { formatFunction } from '../../src/validation/schema.js'

// A recogniser may answer false for a valid string (its function then
// decides), never true for one its function refuses: the walk would accept
// a record the full path answers 400.

const recognised = (s: string): boolean => isCommonDateTime(Buffer.from(s, 'latin1'), 0, s.length)
const functions = ['date-time', 'iso-date-time'].map(name => ({ name, check: formatFunction(name)! }))

t.test('each byte recogniser belongs to a format the schemas have', async t => {
  for (const name of Object.keys(BYTE_FORMATS)) t.type(formatFunction(name), 'function', name)
})

t.test('the shapes devices send are recognised without decoding', async t => {
  for (const s of [
    '2026-11-22T08:15:30.123Z', '2026-11-22T08:15:29Z', '2026-11-22T08:15:28.500+01:00', '2026-11-22T08:15:28z',
    '2024-02-29T23:59:59.999999-23:59', '1000-01-01T00:00:00+00:00', '9999-12-31T23:59:59Z'
  ]) t.ok(recognised(s), s)
})

t.test('edges and other forms are left to the functions', async t => {
  for (const s of [
    '2026-02-29T00:00:00Z', '2100-02-29T00:00:00Z', '2026-04-31T00:00:00Z', '2026-00-10T00:00:00Z', '2026-13-10T00:00:00Z',
    '2026-01-00T00:00:00Z', '2026-01-32T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T00:60:00Z', '2026-01-01T00:00:60Z',
    '2026-01-01T00:00:00+24:00', '2026-01-01T00:00:00+00:60', '2026-01-01T00:00:00+0000', '2026-01-01T00:00:00+00',
    '2026-01-01T00:00:00', '2026-01-01T00:00Z', '2026-01-01 00:00:00Z', '2026-01-01t00:00:00Z', '2026-01-01T00:00:00.Z',
    '2026-01-01T00:00:00,5Z', '0999-01-01T00:00:00Z', '0000-02-29T00:00:00Z', '2026-01-01T00:00:00ZZ', '2026-01-01T00:00:00Z ',
    '2026/01/01T00:00:00Z', '2026-01-01T00-00-00Z', '2016-12-31T23:59:60Z', '+2026-01-01T00:00:00Z', ''
  ]) t.notOk(recognised(s), JSON.stringify(s))
})

t.test('nothing recognised is refused by either function, over many timestamp-like strings', async t => {
  let seed = Number(process.env['FUZZ_SEED'] ?? 7)
  const random = (n: number): number => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed % n }
  const pick = <T>(list: readonly T[]): T => list[random(list.length)]!
  const two = (max: number): string => String(random(max)).padStart(2, '0')
  const alphabet = '0123456789-:T.Zz+ t,'
  let recognisedCount = 0
  for (let n = 0; n < 100000; n++) {
    let s = `${pick(['0000', '0099', '0400', '0999', '1000', '1900', '2000', '2024', '2026', '2100', '9999', String(1000 + random(9000))])}-${two(14)}-${two(33)}` +
      `${pick(['T', 'T', 'T', 't', ' '])}${two(25)}:${two(61)}:${two(62)}${pick(['', '', '.', '.1', '.123', ',5', '.5.5'])}` +
      pick(['Z', 'z', '', `+${two(25)}:${two(61)}`, `-${two(24)}:${two(60)}`, '+0000', '+00', ' Z'])
    for (let m = random(3); m > 0; m--) {
      const at = random(s.length + 1)
      const op = random(3)
      s = s.slice(0, at) + (op === 2 ? '' : pick([...alphabet])) + s.slice(op === 0 ? at : at + 1)
    }
    if (!recognised(s)) continue
    recognisedCount++
    for (const { name, check } of functions) if (!check(s)) t.fail(`${JSON.stringify(s)} is recognised but ${name} refuses it`)
  }
  t.ok(recognisedCount > 1000, `${recognisedCount} of the strings were recognised, enough to have tested something`)
})
