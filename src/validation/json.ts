import { errorKey } from './schema.js'
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, DOT, JSON_MAX_DEPTH, MINUS, NINE, OPEN_ARRAY, OPEN_OBJECT, QUOTE, ZERO } from './json-bytes.js'

/**
 * The widest integer any field may hold: what a consumer decoding into an
 * int64 (Java's long, Go's int64, a Kafka Connect INT64) can read. A wider
 * literal would be published verbatim and read as an overflow, an error or
 * a rounded number, each consumer its own way.
 */
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
/** Digits of an integer literal that always fits an int64: only longer ones are compared. */
const INT64_SAFE_DIGITS = 18

const LONE_SURROGATE = 'must be well-formed Unicode (no lone surrogates)'
const PAST_INT64 = 'must be an integer from -9223372036854775808 to 9223372036854775807'

/**
 * The one policy for a JSON body, every route's: what JSON.parse accepts but
 * a consumer may read differently from us, as `key → message` in the spec's
 * key form (empty when there is none):
 * - a key given twice in one object (JSON.parse keeps the last, other
 *   decoders the first, or both);
 * - a number JSON cannot represent, one that parses to ±Infinity (`1e309`);
 * - an integer literal past int64 (INT64_MIN, INT64_MAX);
 * - a string (or key) holding a lone surrogate escape (`"\\uD800"`): it is
 *   not Unicode, so a consumer's UTF-8 encoder replaces it, refuses it or
 *   writes bytes no decoder takes;
 * - nesting deeper than `maxDepth`.
 *
 * `text` must be the bytes `value` was parsed from (so it is valid JSON).
 * The common case costs one pass over the bytes (depth, one `:` per
 * member, escapes and long integers) and one walk of the value (keys kept,
 * finite numbers); only a body that fails is tokenised again to name where.
 */
export function jsonTextProblems (text: Uint8Array, value: unknown, maxDepth = JSON_MAX_DEPTH): Record<string, string> {
  const scan = scanText(text)
  if (scan.depth > maxDepth) return { body: `must not nest deeper than ${maxDepth} levels` }
  const problems: Record<string, string> = {}
  const counted = { members: 0, nonFinite: false }
  count(value, counted)
  if (counted.nonFinite) nameNonFinite(value, '', problems)
  if (counted.members !== scan.members || scan.suspect) locate(text, problems)
  return problems
}

/**
 * Greatest nesting, the number of object members (each has exactly one `:`
 * outside strings), and whether a string holds a surrogate escape or an
 * integer literal is long enough to be past int64 (`suspect`: locate decides).
 */
function scanText (text: Uint8Array): { depth: number, members: number, suspect: boolean } {
  let depth = 0
  let max = 0
  let members = 0
  let suspect = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === QUOTE) {
      const end = stringEnd(text, i)
      if (!suspect && hasSurrogateEscape(text, i, end)) suspect = true
      i = end
    } else if (c === COLON) members++
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) { if (++depth > max) max = depth } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--
    else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      const end = numberEnd(text, i)
      if (!suspect && end - i > INT64_SAFE_DIGITS) suspect = true
      i = end - 1
    }
  }
  return { depth: max, members, suspect }
}

/** Index of the quote that closes the string opening at `start`. */
function stringEnd (text: Uint8Array, start: number): number {
  let i = start + 1
  while (i < text.length && text[i] !== QUOTE) i += text[i] === BACKSLASH ? 2 : 1
  return i
}

/** Index past the number literal at `start`. */
function numberEnd (text: Uint8Array, start: number): number {
  let i = start + 1
  for (; i < text.length; i++) {
    const c = text[i]!
    if (!((c >= ZERO && c <= NINE) || c === DOT || c === MINUS || c === 0x2b || c === 0x65 || c === 0x45)) break
  }
  return i
}

/** A `\\uD...` escape with D8 to DF between the quotes at `start` and `end`: cheap to find, and rare in honest text. */
function hasSurrogateEscape (text: Uint8Array, start: number, end: number): boolean {
  for (let i = start + 1; i < end; i++) {
    if (text[i] !== BACKSLASH) continue
    if (text[i + 1] === 0x75 && surrogateAt(text, i) !== 0) return true
    i++
  }
  return false
}

/** 1 for a high surrogate escape at `i`, 2 for a low one, 0 for anything else. */
function surrogateAt (text: Uint8Array, i: number): number {
  if (text[i] !== BACKSLASH || text[i + 1] !== 0x75 || (text[i + 2]! | 0x20) !== 0x64) return 0
  const c = text[i + 3]! | 0x20
  if (c >= 0x38 && c <= 0x39) return 1
  if (c === 0x61 || c === 0x62) return 1
  if (c >= 0x63 && c <= 0x66) return 2
  return 0
}

/** Whether the string between the quotes at `start` and `end` has a surrogate escape that is not half of a pair. */
function hasLoneSurrogate (text: Uint8Array, start: number, end: number): boolean {
  for (let i = start + 1; i < end; i++) {
    if (text[i] !== BACKSLASH) continue
    const kind = surrogateAt(text, i)
    if (kind === 2) return true
    if (kind === 1) {
      if (surrogateAt(text, i + 6) !== 2) return true
      i += 11
      continue
    }
    i++
  }
  return false
}

/** Whether the number literal from `start` to `end` is an integer past int64. */
function pastInt64 (text: Uint8Array, start: number, end: number): boolean {
  if (end - start <= INT64_SAFE_DIGITS) return false
  for (let i = start; i < end; i++) {
    const c = text[i]!
    if (c === DOT || c === 0x65 || c === 0x45) return false
  }
  const n = BigInt(Buffer.from(text.buffer, text.byteOffset + start, end - start).toString('latin1'))
  return n < INT64_MIN || n > INT64_MAX
}

/** Counts the members of every object and notes a non-finite number; recursion is bounded by the depth check. */
function count (value: unknown, counted: { members: number, nonFinite: boolean }): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) counted.nonFinite = true
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) count(value[i], counted)
  } else if (typeof value === 'object' && value !== null) {
    for (const key in value) {
      counted.members++
      count((value as Record<string, unknown>)[key], counted)
    }
  }
}

/** Records where each non-finite number is (only run when there is one: building paths costs). */
function nameNonFinite (value: unknown, path: string, problems: Record<string, string>): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) problems[errorKey(path) || 'body'] ??= 'must be a finite number (JSON has no Infinity)'
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) nameNonFinite(value[i], `${path}/${i}`, problems)
  } else if (typeof value === 'object' && value !== null) {
    for (const key of Object.keys(value)) nameNonFinite((value as Record<string, unknown>)[key], `${path}/${pointer(key)}`, problems)
  }
}

/** A key as a JSON Pointer segment, which is what errorKey reads. */
function pointer (key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1')
}

interface Frame { keys: Set<string> | undefined, path: string, index: number }

/**
 * Names, in `problems`, each key given twice in its object, each lone
 * surrogate and each integer past int64, by the spec-form key of where it
 * is. Runs only on a body already known to hold one, so clarity wins over
 * speed here.
 */
function locate (text: Uint8Array, problems: Record<string, string>): void {
  const stack: Frame[] = []
  let pendingKey: string | undefined
  const childPath = (): string => {
    const top = stack[stack.length - 1]
    if (!top) return ''
    if (top.keys) return `${top.path}/${pointer(pendingKey ?? '')}`
    return `${top.path}/${top.index}`
  }
  const note = (path: string, message: string): void => { problems[errorKey(path) || 'body'] ??= message }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === QUOTE) {
      const end = stringEnd(text, i)
      const top = stack[stack.length - 1]
      const lone = hasLoneSurrogate(text, i, end)
      if (top?.keys && pendingKey === undefined && isKey(text, end + 1)) {
        const key = JSON.parse(Buffer.from(text.buffer, text.byteOffset + i, end + 1 - i).toString('utf8')) as string
        if (lone) note(top.path, `${LONE_SURROGATE} in a key`)
        else if (top.keys.has(key)) note(`${top.path}/${pointer(key)}`, 'is given more than once')
        top.keys.add(key)
        pendingKey = key
      } else if (lone) note(childPath(), LONE_SURROGATE)
      i = end
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      const end = numberEnd(text, i)
      if (pastInt64(text, i, end)) note(childPath(), PAST_INT64)
      i = end - 1
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      stack.push({ keys: c === OPEN_OBJECT ? new Set() : undefined, path: childPath(), index: 0 })
      pendingKey = undefined
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      stack.pop()
      pendingKey = undefined
    } else if (c === COMMA) {
      const top = stack[stack.length - 1]
      if (top && !top.keys) top.index++
      pendingKey = undefined
    }
  }
}

/** True when the next non-blank byte from `at` is `:`, i.e. the string just read was a key. */
function isKey (text: Uint8Array, at: number): boolean {
  for (let i = at; i < text.length; i++) {
    const c = text[i]!
    if (c === COLON) return true
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false
  }
  return false
}
