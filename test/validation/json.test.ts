import t from 'tap'
import { jsonTextProblems } from '../../src/validation/index.js'

/** jsonTextProblems as every route calls it: the parsed value and the bytes it came from. */
const problems = (text: string): Record<string, string> => jsonTextProblems(Buffer.from(text), JSON.parse(text))
const LONE = 'must be well-formed Unicode (no lone surrogates)'
const PAST = 'must be an integer from -9223372036854775808 to 9223372036854775807'

t.test('a lone surrogate escape is refused in every string, named where it is', async t => {
  t.same(problems('{"message":"\\ud800"}'), { message: LONE }, 'a high surrogate alone')
  t.same(problems('{"message":"a\\uDC00b"}'), { message: LONE }, 'a low surrogate alone')
  t.same(problems('{"message":"\\uD83D x"}'), { message: LONE }, 'a high surrogate followed by something else')
  t.same(problems('{"message":"\\uD83D\\u0041"}'), { message: LONE }, 'a high surrogate followed by another escape')
  t.same(problems('{"message":"\\uDE00\\uD83D"}'), { message: LONE }, 'a pair in the wrong order')
  t.same(problems('{"options":{"list":["ok","\\udbff"]}}'), { 'options.list[1]': LONE }, 'deep in an array')
  t.same(problems('{"a":{"\\ud800":1}}'), { a: `${LONE} in a key` }, 'in a key')
  t.same(problems('"\\ud800"'), { body: LONE }, 'the whole body')
})

t.test('surrogate pairs, other escapes and raw non-ASCII are fine', async t => {
  t.same(problems('{"message":"\\uD83D\\uDE00 and \\ud83d\\ude00"}'), {}, 'a pair, either case')
  t.same(problems('{"message":"\\\\ud800"}'), {}, 'an escaped backslash then the text ud800')
  t.same(problems('{"message":"\\u00e9 é 😀 \\uFFFD \\uE000 \\uD7FF"}'), {}, 'BMP escapes around the surrogate range')
})

t.test('an integer literal past int64 is refused, exactly at the bounds', async t => {
  t.same(problems('{"n":9223372036854775807,"m":-9223372036854775808}'), {}, 'int64\'s own bounds')
  t.same(problems('{"n":9223372036854775808}'), { n: PAST })
  t.same(problems('{"n":-9223372036854775809}'), { n: PAST })
  t.same(problems('{"a":[1,{"b":[123456789012345678901234567890]}]}'), { 'a[1].b[0]': PAST }, 'deep, and in an array')
  t.same(problems('99999999999999999999'), { body: PAST }, 'the whole body')
  t.same(problems('{"n":1e19,"m":12345678901234567890.5,"k":-0.0000000000000000001}'), {}, 'a fraction or an exponent is a float, not an integer literal')
  t.same(problems('{"s":"99999999999999999999"}'), {}, 'digits in a string are text')
})

t.test('every problem of a body is named at once, with the older ones', async t => {
  t.same(problems('{"a":1,"a":2,"b":"\\ud800","c":99999999999999999999,"d":1e999}'), {
    a: 'is given more than once',
    b: LONE,
    c: PAST,
    d: 'must be a finite number (JSON has no Infinity)'
  })
})
