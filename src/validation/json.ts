import { errorKey } from './schema.js'
import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, JSON_MAX_DEPTH, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from './json-bytes.js'



/**
 * What JSON.parse accepts but a consumer may read differently from us,
 * as `key → message` in the spec's key form (empty when there is none):
 * - a key given twice in one object (JSON.parse keeps the last, other
 *   decoders the first, or both);
 * - a number JSON cannot represent, one that parses to ±Infinity (`1e309`);
 * - nesting deeper than `maxDepth`.
 *
 * `text` must be the bytes `value` was parsed from (so it is valid JSON).
 * The common case costs one pass over the bytes (depth, and one `:` per
 * member) and one walk of the value (keys kept, finite numbers); only a
 * body that fails is tokenised again to name the duplicated key.
 */
export function jsonTextProblems (text: Uint8Array, value: unknown, maxDepth = JSON_MAX_DEPTH): Record<string, string> {
  const scan = scanText(text)
  if (scan.depth > maxDepth) return { body: `must not nest deeper than ${maxDepth} levels` }
  const problems: Record<string, string> = {}
  const counted = { members: 0, nonFinite: false }
  count(value, counted)
  if (counted.nonFinite) nameNonFinite(value, '', problems)
  if (counted.members !== scan.members) {
    const duplicate = findDuplicateKey(text)
    if (duplicate !== undefined) problems[duplicate || 'body'] ??= 'is given more than once'
  }
  return problems
}

/** Greatest nesting, and the number of object members (each has exactly one `:` outside strings). */
function scanText (text: Uint8Array): { depth: number, members: number } {
  let depth = 0
  let max = 0
  let members = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === QUOTE) i = stringEnd(text, i)
    else if (c === COLON) members++
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) { if (++depth > max) max = depth } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--
  }
  return { depth: max, members }
}

/** Index of the quote that closes the string opening at `start`. */
function stringEnd (text: Uint8Array, start: number): number {
  let i = start + 1
  while (i < text.length && text[i] !== QUOTE) i += text[i] === BACKSLASH ? 2 : 1
  return i
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
 * The spec-form key of the first member whose key its object already has,
 * or undefined. Runs only on a body already known to hold one, so clarity
 * wins over speed here.
 */
function findDuplicateKey (text: Uint8Array): string | undefined {
  const stack: Frame[] = []
  let pendingKey: string | undefined
  const childPath = (): string => {
    const top = stack[stack.length - 1]
    if (!top) return ''
    if (top.keys) return `${top.path}/${pointer(pendingKey ?? '')}`
    return `${top.path}/${top.index}`
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === QUOTE) {
      const end = stringEnd(text, i)
      const top = stack[stack.length - 1]
      if (top?.keys && pendingKey === undefined && isKey(text, end + 1)) {
        const key = JSON.parse(Buffer.from(text.buffer, text.byteOffset + i, end + 1 - i).toString('utf8')) as string
        if (top.keys.has(key)) return errorKey(`${top.path}/${pointer(key)}`)
        top.keys.add(key)
        pendingKey = key
      }
      i = end
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
  return undefined
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
