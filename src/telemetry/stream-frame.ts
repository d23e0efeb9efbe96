import { arraySpans, CLOSE_OBJECT, COMMA, isSpace, OPEN_ARRAY, OPEN_OBJECT, QUOTE, stringEnd, valueEnd, type Spans } from './batch-body.js'

/**
 * A message of the telemetry stream: `{"seq": N, "record": {...}}`, or
 * `{"seq": N, "records": [{...}, ...]}` whose records get the sequence
 * numbers N, N+1, .... Read without parsing the records, whose bytes are
 * then checked as a one-record request's body is.
 */
export type Frame =
  | { seq: number, spans: Spans }
  | { seq: number | undefined, errors: Record<string, string> }

const COLON = 0x3a
const SEQ = /^(0|[1-9]\d{0,15})$/

const MESSAGE_SHAPE = 'must be a JSON object {"seq": <integer>, "record": {...}} or {"seq": <integer>, "records": [...]}'

export function readFrame (message: Buffer): Frame {
  const members = topMembers(message)
  if (members === undefined) return { seq: undefined, errors: { message: MESSAGE_SHAPE } }
  const errors: Record<string, string> = {}
  let seq: number | undefined
  const seqSpan = members.get('seq')
  if (seqSpan === undefined) errors['seq'] = 'is required'
  else {
    const text = message.toString('latin1', seqSpan[0], seqSpan[1])
    if (SEQ.test(text) && Number(text) <= Number.MAX_SAFE_INTEGER) seq = Number(text)
    else errors['seq'] = 'must be an integer from 0 to 2^53 - 1'
  }
  const one = members.get('record')
  const many = members.get('records')
  let spans: Spans | undefined
  if (one !== undefined && many !== undefined) errors['message'] = 'must hold "record" or "records", not both'
  else if (one !== undefined) {
    if (message[one[0]] === OPEN_OBJECT) spans = [one]
    else errors['record'] = 'must be an object'
  } else if (many !== undefined) {
    const inner = message[many[0]] === OPEN_ARRAY ? arraySpans(message.subarray(many[0], many[1])) : undefined
    if (inner === undefined) errors['records'] = 'must be an array of records'
    else if (inner.length === 0) errors['records'] = 'must hold at least one record'
    else spans = inner.map(([s, e]) => [s + many[0], e + many[0]])
  } else errors['record'] = 'is required'
  for (const key of members.keys()) if (key !== 'seq' && key !== 'record' && key !== 'records') errors[key] = 'is not a member of a stream message'
  if (Object.keys(errors).length > 0 || spans === undefined) return { seq, errors }
  if (seq! > Number.MAX_SAFE_INTEGER - (spans.length - 1)) return { seq, errors: { seq: 'must leave room for a sequence number per record' } }
  return { seq: seq!, spans }
}

/** The members of a top-level object: key → the span of its value; undefined when the message is not such an object. */
function topMembers (m: Buffer): Map<string, [number, number]> | undefined {
  const members = new Map<string, [number, number]>()
  let i = skip(m, 0)
  if (m[i] !== OPEN_OBJECT) return undefined
  i = skip(m, i + 1)
  if (m[i] === CLOSE_OBJECT) return skip(m, i + 1) === m.length ? members : undefined
  for (;;) {
    if (m[i] !== QUOTE) return undefined
    const close = stringEnd(m, i + 1)
    if (close < 0) return undefined
    const key = m.toString('utf8', i + 1, close)
    i = skip(m, close + 1)
    if (m[i] !== COLON) return undefined
    const start = skip(m, i + 1)
    const end = valueEnd(m, start)
    if (end < 0) return undefined
    let stop = end
    while (stop > start && isSpace(m[stop - 1]!)) stop--
    if (stop === start || members.has(key)) return undefined
    members.set(key, [start, stop])
    i = end
    if (m[i] === CLOSE_OBJECT) return skip(m, i + 1) === m.length ? members : undefined
    if (m[i] !== COMMA) return undefined
    i = skip(m, i + 1)
  }
}

function skip (m: Buffer, i: number): number {
  while (i < m.length && isSpace(m[i]!)) i++
  return i
}
