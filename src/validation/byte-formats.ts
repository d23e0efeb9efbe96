/**
 * Formats the byte walk (byte-check.ts) can vouch for without decoding the
 * string: each recogniser accepts only a common shape that the format's own
 * function (the one ajv runs) accepts too, and answers false for anything
 * else, which then goes to that function. So a recogniser may be narrow,
 * never wide; test/validation/byte-formats.test.ts holds it to that.
 */
export type ByteFormat = (b: Uint8Array, start: number, end: number) => boolean

const ZERO = 0x30
const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/**
 * `YYYY-MM-DDTHH:MM:SS[.fraction](Z|z|±HH:MM)`, every field in range, the
 * year from 1000 on: what devices send, and inside both RFC 3339's
 * `date-time` (ajv-formats) and our ISO 8601 `iso-date-time`. Leap seconds,
 * other separators, a missing zone or seconds are left to the functions.
 * (The year bound keeps clear of Date.UTC reading years 0–99 as 1900–1999.)
 */
export function isCommonDateTime (b: Uint8Array, start: number, end: number): boolean {
  if (end - start < 20) return false
  const year = digits4(b, start)
  const month = digits2(b, start + 5)
  const day = digits2(b, start + 8)
  if (year < 1000 || b[start + 4] !== 0x2d || b[start + 7] !== 0x2d || b[start + 10] !== 0x54) return false
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return false
  if (digits2(b, start + 11) > 23 || b[start + 13] !== 0x3a || digits2(b, start + 14) > 59 || b[start + 16] !== 0x3a || digits2(b, start + 17) > 59) return false
  let i = start + 19
  if (b[i] === 0x2e) {
    const first = ++i
    while (i < end && isDigit(b[i]!)) i++
    if (i === first) return false
  }
  const zone = b[i]
  if (zone === 0x5a || zone === 0x7a) return i + 1 === end
  if (zone !== 0x2b && zone !== 0x2d) return false
  return i + 6 === end && digits2(b, i + 1) <= 23 && b[i + 3] === 0x3a && digits2(b, i + 4) <= 59
}

function daysIn (year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return month === 2 && leap ? 29 : DAYS[month]!
}

function isDigit (c: number): boolean {
  return c >= ZERO && c <= ZERO + 9
}

/** Two digits' value, or 100 (out of every range) when either is not a digit. */
function digits2 (b: Uint8Array, i: number): number {
  const h = b[i]
  const l = b[i + 1]
  if (h === undefined || l === undefined || !isDigit(h) || !isDigit(l)) return 100
  return (h - ZERO) * 10 + (l - ZERO)
}

/** Four digits' value, or -1 when any is not a digit. */
function digits4 (b: Uint8Array, i: number): number {
  const h = digits2(b, i)
  const l = digits2(b, i + 2)
  return h === 100 || l === 100 ? -1 : h * 100 + l
}

/** Byte recognisers by format name; a format not here is always decoded and checked by its function. */
export const BYTE_FORMATS: Readonly<Record<string, ByteFormat>> = {
  'date-time': isCommonDateTime,
  'iso-date-time': isCommonDateTime
}
