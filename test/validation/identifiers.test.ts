import t from 'tap'
import {
  isLabel, isStorageId, labelProblem, LABEL_MAX, REQUEST_ID, STORAGE_ID, STORAGE_ID_MAX, STORAGE_ID_PATTERN
} from '../../src/validation/identifiers.js'

t.test('a storage id: 1 to 128 of letters, digits and . _ : @ -, starting with a letter or digit', async t => {
  t.equal(STORAGE_ID_MAX, 128)
  t.equal(STORAGE_ID_PATTERN, STORAGE_ID.source, 'the pattern given to JSON schemas is the one tested here')
  for (const id of ['a', 'Z', '7', 'acme', 'a.b_c:d@e-f', 'fleet-01@eu:prod', 'a..b', 'a'.repeat(128), `9${'-'.repeat(127)}`]) {
    t.ok(isStorageId(id), JSON.stringify(id))
  }
  for (const id of [
    '', 'a'.repeat(129), '.', '..', '.hidden', '-a', '_a', ':a', '@a', 'a/b', '../a', 'a\\b', 'a~b', 'a b', ' a', 'a ',
    'a\n', 'a\u0000', 'é', 'aé', 'a\u200b', 'a+b', 'a%2fb', 'a#b', 'a?b', 'a*b', '[a]'
  ]) t.notOk(isStorageId(id), JSON.stringify(id))
  for (const v of [undefined, null, 1, ['a'], { a: 1 }, true]) t.notOk(isStorageId(v), `${JSON.stringify(v)} is not a string`)
})

t.test('a label: any well-formed text of 1 to 256 code units without control characters', async t => {
  t.equal(LABEL_MAX, 256)
  for (const label of ['a', 'truck 7', 'Lkw-Ü', '车辆', '🚚', 'a/b\\c..', ' ', '~', '\u00a0', 'x'.repeat(256), '🚚'.repeat(128)]) {
    t.ok(isLabel(label), JSON.stringify(label))
    t.equal(labelProblem(label), undefined, `${JSON.stringify(label)} has no problem`)
  }
  const problems: Array<[string, string]> = [
    ['', 'must not be empty'],
    ['x'.repeat(257), 'must be at most 256 characters'],
    ['🚚'.repeat(128) + 'x', 'must be at most 256 characters'],
    ['a\ud800', 'must be well-formed Unicode (no lone surrogates)'],
    ['\udc00a', 'must be well-formed Unicode (no lone surrogates)'],
    ['\u0000', 'must not contain control characters'],
    ['a\u001fb', 'must not contain control characters'],
    ['a\nb', 'must not contain control characters'],
    ['a\u007f', 'must not contain control characters'],
    ['\u0080a', 'must not contain control characters'],
    ['a\u009f', 'must not contain control characters']
  ]
  for (const [label, problem] of problems) {
    t.notOk(isLabel(label), JSON.stringify(label))
    t.equal(labelProblem(label), problem, `${JSON.stringify(label).slice(0, 40)}: ${problem}`)
  }
  for (const v of [undefined, null, 7, ['a'], {}]) t.notOk(isLabel(v), `${JSON.stringify(v)} is not a string`)
})

t.test('a request id: 1 to 200 visible ASCII characters', async t => {
  for (const id of ['!', '~', 'a', 'req-1/2?x=y', 'x'.repeat(200)]) t.ok(REQUEST_ID.test(id), JSON.stringify(id))
  for (const id of ['', 'x'.repeat(201), ' ', 'a b', 'a\tb', 'a\u007f', 'é', 'a\n', '\nA']) t.notOk(REQUEST_ID.test(id), JSON.stringify(id))
})
