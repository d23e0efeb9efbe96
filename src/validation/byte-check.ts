import * as schemaBits from './byte-schema.js'
import type { FormatLookup, Primitive, PropertyEntry, SchemaNode } from './byte-schema.js'
import * as jsonBytes from './json-bytes.js'

// Copied into this module's own constants: V8 checks an imported binding on
// every use in optimised code, and the walk's loops read these all the time
// (14.7 against 13.6 µs a record in a loop).
const { ACCEPTED_MAX_LENGTH, ACCEPTED_SLOTS, ANY, compileNode, HASH_MASK, T_ARRAY, T_BOOLEAN, T_INTEGER, T_NULL, T_NUMBER, T_OBJECT, T_STRING } = schemaBits
const { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, DOT, JSON_MAX_DEPTH, MINUS, NINE, OPEN_ARRAY, OPEN_OBJECT, PLUS, QUOTE, ZERO } = jsonBytes

/**
 * A one-pass check of a JSON body's bytes against a schema, for the hot
 * path: it builds no value, so it costs a fraction of JSON.parse plus ajv.
 * It answers only "certainly valid": the members asked for in `capture`, or
 * undefined when the body is invalid or merely unusual (an escape or a
 * non-ASCII byte where the schema reads a string, a number it cannot read
 * exactly, a huge object). The caller then takes the full path (JSON.parse,
 * jsonTextProblems, ajv), which names every problem; so this must never
 * accept what that path refuses, and test/telemetry/record-bytes.test.ts
 * compares the two on many thousands of bodies.
 *
 * "Valid" is what the full path accepts: JSON.parse's grammar on the text
 * decoded as UTF-8, no key twice in one object, every number finite, no
 * integer literal past int64, no lone surrogate escape, nesting at most
 * `maxDepth`, and the schema.
 */
export type ByteCheck = (bytes: Buffer) => Record<string, string | true> | undefined

const UNSURE = Symbol('unsure')

/** Exact powers of ten: a product or quotient with one is correctly rounded (Clinger's fast path). */
const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`))
/**
 * Keys of one object whose hashes are compared for duplicates: past this
 * the full path decides, so a key costs at most this many comparisons.
 */
const MAX_MEMBERS = 64
/**
 * What each byte is inside a string, so that the loop over one tests a
 * byte once: PLAIN (printable ASCII), WIDE (part of a non-ASCII character),
 * QUOTE, BACKSLASH, or CONTROL (never allowed).
 */
const PLAIN = 0
const WIDE = 1
const CONTROL = 2
const STRING_BYTE = new Uint8Array(256).map((_, c) => c === QUOTE || c === BACKSLASH ? c : c < 0x20 ? CONTROL : c > 0x7e ? WIDE : PLAIN)
const TRUE = Buffer.from('true')
const FALSE = Buffer.from('false')
const NULL = Buffer.from('null')
/** Buffer's own latin1 decoder, without toString's argument handling (a string's bytes are plain ASCII here). */
const latin1 = (b: Buffer, start: number, end: number): string => (b as unknown as { latin1Slice: (start: number, end: number) => string }).latin1Slice(start, end)

export function compileByteCheck (schema: object, formats: FormatLookup, capture: readonly string[] = [], maxDepth = JSON_MAX_DEPTH): ByteCheck {
  const root = compileNode(schema as Record<string, unknown>, formats, capture)
  return bytes => {
    try {
      return walk(bytes, root, maxDepth)
    } catch (e) {
      if (e === UNSURE) return undefined
      throw e
    }
  }
}

/** Where the walk is: one at a time, as it is synchronous. */
let captured: Record<string, string | true> = {}
/** Length and hash of the keys of every open object, innermost last. */
const keyLength = new Int32Array(MAX_MEMBERS * 4)
const keyHash = new Int32Array(MAX_MEMBERS * 4)
let keyTop = 0
let maxDepth = 0

function walk (b: Buffer, root: SchemaNode, depthLimit: number): Record<string, string | true> {
  captured = {}
  keyTop = 0
  maxDepth = depthLimit
  let i = space(b, 0)
  if (b[i] !== OPEN_OBJECT) throw UNSURE
  i = space(b, value(b, i, root, 0, undefined))
  if (i !== b.length) throw UNSURE
  return captured
}

function space (b: Buffer, i: number): number {
  const n = b.length
  while (i < n) {
    const c = b[i]!
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break
    i++
  }
  return i
}

/** The value at `i` (no blank first), checked against `node`; `capture` names it for the caller. Returns the index after it. */
function value (b: Buffer, i: number, node: SchemaNode, depth: number, capture: string | undefined): number {
  const c = b[i]
  if (c === QUOTE) {
    if (!(node.types & T_STRING)) throw UNSURE
    return string(b, i, node, capture)
  }
  let end: number
  if (c === OPEN_OBJECT) {
    if (!(node.types & T_OBJECT) || depth >= maxDepth) throw UNSURE
    end = object(b, i, node, depth + 1)
  } else if (c === OPEN_ARRAY) {
    if (!(node.types & T_ARRAY) || depth >= maxDepth) throw UNSURE
    end = array(b, i, node, depth + 1)
  } else if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) {
    end = number(b, i, node)
  } else if (c === 0x74) {
    end = literal(b, i, TRUE, node, T_BOOLEAN, true)
  } else if (c === 0x66) {
    end = literal(b, i, FALSE, node, T_BOOLEAN, false)
  } else if (c === 0x6e) {
    end = literal(b, i, NULL, node, T_NULL, null)
  } else {
    throw UNSURE
  }
  if (capture !== undefined) captured[capture] = true
  return end
}

function object (b: Buffer, i: number, node: SchemaNode, depth: number): number {
  const base = keyTop
  let seen = 0
  /** A bit per hash seen in this object (hash mod 32): most keys need no comparison at all. */
  let hashes = 0
  /** Where to start looking for the next key's member. */
  let next = 0
  i = space(b, i + 1)
  if (b[i] === CLOSE_OBJECT) {
    i++
  } else {
    for (;;) {
      if (b[i] !== QUOTE) throw UNSURE
      const start = i + 1
      let hash = 0
      // A key is plain printable ASCII only, so that equal keys are equal bytes.
      const n = b.length
      for (i = start; ; i++) {
        if (i >= n) throw UNSURE
        const c = b[i]!
        if (c === QUOTE) break
        if (c < 0x20 || c > 0x7e || c === BACKSLASH) throw UNSURE
        hash = (Math.imul(hash, 31) + c) & HASH_MASK
      }
      const length = i - start
      const bit = 1 << (hash & 31)
      remember(base, length, hash, (hashes & bit) !== 0)
      hashes |= bit
      const found = node.properties === undefined ? -1 : match(b, node.properties, start, length, hash, next)
      const entry = found < 0 ? undefined : node.properties![found]!
      if (found >= 0) next = found + 1 === node.properties!.length ? 0 : found + 1
      i = space(b, i + 1)
      if (b[i] !== COLON) throw UNSURE
      i = space(b, i + 1)
      if (entry === undefined) {
        i = value(b, i, ANY, depth, undefined)
      } else {
        seen |= entry.requiredBit
        i = value(b, i, entry.node, depth, depth === 1 && entry.capture ? entry.name : undefined)
      }
      i = space(b, i)
      const c = b[i]
      if (c === CLOSE_OBJECT) { i++; break }
      if (c !== COMMA) throw UNSURE
      i = space(b, i + 1)
    }
  }
  keyTop = base
  if ((seen & node.requiredMask) !== node.requiredMask) throw UNSURE
  return i
}

/**
 * Refuses a key its object already has (JSON.parse keeps the last, other
 * decoders the first). Two keys of one hash and length are not compared:
 * equal or a collision, the full path decides, so a body built of colliding
 * keys costs no more than any other. `compare` is false when no earlier key
 * of the object has the hash's bit, so nothing can match.
 */
function remember (base: number, length: number, hash: number, compare: boolean): void {
  const top = keyTop
  if (top - base >= MAX_MEMBERS || top >= keyHash.length) throw UNSURE
  if (compare) for (let k = base; k < top; k++) if (keyHash[k] === hash && keyLength[k] === length) throw UNSURE
  keyLength[top] = length
  keyHash[top] = hash
  keyTop = top + 1
}

/**
 * The index in `properties` of this key's member, or -1. Member names have
 * distinct hashes, so one is compared at most. The scan starts at `from`,
 * past the last member found: bodies mostly list members in the schema's
 * order, and then the first hash compared is the one.
 */
function match (b: Buffer, properties: PropertyEntry[], start: number, length: number, hash: number, from: number): number {
  const n = properties.length
  for (let k = 0, p = from; k < n; k++, p = p + 1 === n ? 0 : p + 1) {
    if (properties[p]!.hash !== hash) continue
    const key = properties[p]!.key
    if (key.length !== length) return -1
    let j = 0
    while (j < length && key[j] === b[start + j]) j++
    return j === length ? p : -1
  }
  return -1
}

function array (b: Buffer, i: number, node: SchemaNode, depth: number): number {
  const items = node.items ?? ANY
  let count = 0
  i = space(b, i + 1)
  if (b[i] === CLOSE_ARRAY) {
    i++
  } else {
    for (;;) {
      i = space(b, value(b, i, items, depth, undefined))
      count++
      const c = b[i]
      if (c === CLOSE_ARRAY) { i++; break }
      if (c !== COMMA) throw UNSURE
      i = space(b, i + 1)
    }
  }
  if ((node.minItems !== undefined && count < node.minItems) || (node.maxItems !== undefined && count > node.maxItems)) throw UNSURE
  return i
}

function string (b: Buffer, i: number, node: SchemaNode, capture: string | undefined): number {
  const start = i + 1
  let plain = true
  const n = b.length
  for (i = start; ;) {
    if (i >= n) throw UNSURE
    const kind = STRING_BYTE[b[i]!]!
    if (kind === PLAIN) { i++; continue }
    if (kind === QUOTE) break
    if (kind === BACKSLASH) {
      plain = false
      i = escape(b, i)
    } else if (kind === WIDE) {
      plain = false
      i++
    } else {
      throw UNSURE
    }
  }
  if (!node.readsString && capture === undefined) return i + 1
  // Only a plain string reads the same here as after JSON.parse without
  // decoding it; and its length in bytes is its length in characters.
  if (!plain) throw UNSURE
  const accepted = node.accepted
  let slot = -1
  if (accepted !== undefined && i - start <= ACCEPTED_MAX_LENGTH) {
    let hash = 0
    for (let j = start; j < i; j++) hash = (Math.imul(hash, 31) + b[j]!) | 0
    slot = hash & (ACCEPTED_SLOTS - 1)
    const known = accepted[slot]
    if (known !== undefined && sameBytes(known, b, start, i)) {
      if (capture !== undefined) captured[capture] = known
      return i + 1
    }
  }
  if (node.minLength !== undefined && i - start < node.minLength) throw UNSURE
  const choiceBytes = node.choiceBytes
  if (choiceBytes !== undefined && !oneOf(b, start, i, choiceBytes)) throw UNSURE
  const formatted = node.format === undefined || (node.byteFormat !== undefined && node.byteFormat(b, start, i))
  if (formatted && !node.decodes && capture === undefined) return i + 1
  const s = latin1(b, start, i)
  if (node.pattern !== undefined && !node.pattern.test(s)) throw UNSURE
  if (!formatted && !node.format!(s)) throw UNSURE
  if (choiceBytes === undefined && node.choices !== undefined && !node.choices.includes(s)) throw UNSURE
  if (slot >= 0) accepted![slot] = s
  if (capture !== undefined) captured[capture] = s
  return i + 1
}

/** Whether the plain ASCII string `s` is the bytes from `start` to `end`. */
function sameBytes (s: string, b: Buffer, start: number, end: number): boolean {
  if (s.length !== end - start) return false
  for (let j = 0; j < s.length; j++) if (s.charCodeAt(j) !== b[start + j]) return false
  return true
}

/** Whether the bytes from `start` to `end` are one of `choices`. */
function oneOf (b: Buffer, start: number, end: number, choices: Uint8Array[]): boolean {
  const length = end - start
  for (const choice of choices) {
    if (choice.length !== length) continue
    let j = 0
    while (j < length && choice[j] === b[start + j]) j++
    if (j === length) return true
  }
  return false
}

/** Index after the escape at `i`: JSON's own escapes only. */
function escape (b: Buffer, i: number): number {
  const c = b[i + 1]
  if (c === 0x75) {
    for (let k = i + 2; k < i + 6; k++) if (!isHex(b[k])) throw UNSURE
    // A surrogate may be lone (refused by the full path); pairs are rare enough to leave to it too.
    if ((b[i + 2]! | 0x20) === 0x64 && b[i + 3]! >= 0x38 && (b[i + 3]! <= 0x39 || (b[i + 3]! | 0x20) >= 0x61)) throw UNSURE
    return i + 6
  }
  if (c === QUOTE || c === BACKSLASH || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) return i + 2
  throw UNSURE
}

/**
 * JSON's number grammar. The value is worked out only where the schema
 * reads it or it could overflow, exactly: digits and a power of ten both
 * exact give one correctly rounded operation, as the parser's; anything
 * else is parsed by Number(), which rounds as JSON.parse does.
 */
function number (b: Buffer, start: number, node: SchemaNode): number {
  const n = b.length
  let i = start
  if (b[i] === MINUS) i++
  let mantissa = 0
  let digits = 0
  let scale = 0
  let c = i < n ? b[i]! : -1
  if (c === ZERO) {
    c = ++i < n ? b[i]! : -1
  } else if (c > ZERO && c <= NINE) {
    while (c >= ZERO && c <= NINE) {
      mantissa = mantissa * 10 + (c - ZERO)
      digits++
      c = ++i < n ? b[i]! : -1
    }
  } else {
    throw UNSURE
  }
  if (c === DOT) {
    c = ++i < n ? b[i]! : -1
    if (c < ZERO || c > NINE) throw UNSURE
    while (c >= ZERO && c <= NINE) {
      if (digits > 0 || c !== ZERO) { mantissa = mantissa * 10 + (c - ZERO); digits++ }
      scale--
      c = ++i < n ? b[i]! : -1
    }
  }
  let exponent = false
  if (c === 0x65 || c === 0x45) {
    exponent = true
    c = ++i < n ? b[i]! : -1
    if (c === PLUS || c === MINUS) c = ++i < n ? b[i]! : -1
    if (c < ZERO || c > NINE) throw UNSURE
    while (c >= ZERO && c <= NINE) c = ++i < n ? b[i]! : -1
  }
  if (!(node.types & (T_NUMBER | T_INTEGER))) throw UNSURE
  // An integer literal of 19 digits or more may be past int64: the full path compares it exactly.
  if (!exponent && scale === 0 && i - start > 18) throw UNSURE
  if (!node.readsNumber && !exponent && digits + scale < 300) return i
  let v: number
  if (!exponent && digits <= 15 && scale >= -22) {
    v = scale === 0 ? mantissa : mantissa / POW10[-scale]!
    if (b[start] === MINUS) v = -v
  } else {
    v = Number(latin1(b, start, i))
  }
  if (!Number.isFinite(v)) throw UNSURE
  if (!(node.types & T_NUMBER) && !Number.isInteger(v)) throw UNSURE
  if (node.minimum !== undefined && v < node.minimum) throw UNSURE
  if (node.maximum !== undefined && v > node.maximum) throw UNSURE
  if (node.choices !== undefined && !node.choices.includes(v)) throw UNSURE
  return i
}

function literal (b: Buffer, i: number, word: Uint8Array, node: SchemaNode, type: number, v: Primitive): number {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) throw UNSURE
  if (!(node.types & type)) throw UNSURE
  if (node.choices !== undefined && !node.choices.includes(v)) throw UNSURE
  return i + word.length
}

function isHex (c: number | undefined): boolean {
  return c !== undefined && ((c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66))
}
