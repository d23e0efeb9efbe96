/**
 * Where each record of a batch body is, without parsing the records: the
 * bytes of each are then checked as a one-record request's body is
 * (the byte check, else JSON.parse and ajv), so a record of a batch gets
 * exactly the answer it would get alone.
 */

/** [start, end) of each record in the body. */
export type Spans = Array<[number, number]>

export const NEWLINE = 0x0a
export const CARRIAGE_RETURN = 0x0d
export const SPACE = 0x20
export const TAB = 0x09
export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const COMMA = 0x2c
export const OPEN_ARRAY = 0x5b
export const CLOSE_ARRAY = 0x5d
export const OPEN_OBJECT = 0x7b
export const CLOSE_OBJECT = 0x7d

export const isSpace = (c: number): boolean => c === SPACE || c === TAB || c === NEWLINE || c === CARRIAGE_RETURN

/**
 * NDJSON: one record a line (`\n`, an optional `\r` before it). Lines that
 * hold only whitespace are not records (a body that ends with a newline has
 * no empty last record), so a record's index counts the lines that are.
 */
export function ndjsonSpans (body: Buffer): Spans {
  const spans: Spans = []
  let from = 0
  while (from < body.length) {
    let end = body.indexOf(NEWLINE, from)
    if (end < 0) end = body.length
    let start = from
    let stop = end
    while (start < stop && isSpace(body[start]!)) start++
    while (stop > start && isSpace(body[stop - 1]!)) stop--
    if (stop > start) spans.push([start, stop])
    from = end + 1
  }
  return spans
}

/**
 * A JSON array: each element's bytes, found by following strings and
 * brackets only. Undefined when the body is not an array of that shape
 * (no `[`, an element missing between commas, brackets that do not
 * balance, anything after the `]`): then nothing in it is a record, and
 * the request is refused whole. What is inside an element is the
 * element's own check.
 */
export function arraySpans (body: Buffer): Spans | undefined {
  const n = body.length
  let i = 0
  while (i < n && isSpace(body[i]!)) i++
  if (body[i] !== OPEN_ARRAY) return undefined
  i++
  const spans: Spans = []
  for (;;) {
    while (i < n && isSpace(body[i]!)) i++
    if (i >= n) return undefined
    if (body[i] === CLOSE_ARRAY && spans.length === 0) { i++; break }
    const start = i
    i = valueEnd(body, i)
    if (i < 0) return undefined
    let stop = i
    while (stop > start && isSpace(body[stop - 1]!)) stop--
    if (stop === start) return undefined
    spans.push([start, stop])
    if (body[i] === CLOSE_ARRAY) { i++; break }
    if (body[i] !== COMMA) return undefined
    i++
  }
  while (i < n && isSpace(body[i]!)) i++
  return i === n ? spans : undefined
}

/**
 * Where a value that starts at `from` stops: the index of the first `,`,
 * `]` or `}` outside its strings and brackets (the value's bytes end
 * before it, trailing whitespace aside), or -1 when there is none or its
 * brackets do not balance.
 */
export function valueEnd (body: Buffer, from: number): number {
  let depth = 0
  for (let i = from; i < body.length; i++) {
    const c = body[i]!
    if (c === QUOTE) {
      i = stringEnd(body, i + 1)
      if (i < 0) return -1
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      if (depth === 0) return i
      depth--
    } else if (c === COMMA && depth === 0) return i
  }
  return -1
}

/** The index of the quote that closes a string whose content starts at `from`, or -1. */
export function stringEnd (body: Buffer, from: number): number {
  let at = from
  for (;;) {
    const quote = body.indexOf(QUOTE, at)
    if (quote < 0) return -1
    let backslashes = 0
    while (quote - backslashes - 1 >= from && body[quote - backslashes - 1] === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return quote
    at = quote + 1
  }
}
