import { BYTE_FORMATS, type ByteFormat } from './byte-formats.js'

/**
 * A JSON Schema compiled for the byte walk (byte-check.ts). Only the
 * keywords the request schemas use are understood; any other makes
 * compilation throw, so a schema cannot gain a rule the walk would skip.
 */

export const T_OBJECT = 1
export const T_ARRAY = 2
export const T_STRING = 4
export const T_NUMBER = 8
export const T_INTEGER = 16
export const T_BOOLEAN = 32
export const T_NULL = 64
const T_ANY = 127

export type Primitive = string | number | boolean | null

export interface PropertyEntry {
  /** The key's bytes (ASCII: a key with anything else is not compiled). */
  key: Uint8Array
  /** keyHash of `key`, compared first. */
  hash: number
  name: string
  node: SchemaNode
  /** Bit in the object's required mask, or 0. */
  requiredBit: number
  /** Reported to the caller when it appears at the top level. */
  capture: boolean
}

export interface SchemaNode {
  /** Allowed JSON types; T_NUMBER admits integers, T_INTEGER alone does not admit 1.5. */
  types: number
  properties: PropertyEntry[] | undefined
  /** Every required bit, or 0. */
  requiredMask: number
  minimum: number | undefined
  maximum: number | undefined
  choices: Primitive[] | undefined
  pattern: RegExp | undefined
  format: ((s: string) => boolean) | undefined
  /** Vouches for the format from the bytes; when it cannot, `format` decides. */
  byteFormat: ByteFormat | undefined
  /** The string choices as bytes, when all are printable ASCII: compared without decoding. */
  choiceBytes: Uint8Array[] | undefined
  minLength: number | undefined
  minItems: number | undefined
  maxItems: number | undefined
  items: SchemaNode | undefined
  /** A string here must be looked at to be checked. */
  readsString: boolean
  /** ... and decoded, whatever its bytes: a pattern, or choices not compared as bytes. */
  decodes: boolean
  /**
   * Strings this node accepted lately, by a hash of their bytes, when it
   * decodes: a device's keys and ids recur record after record, and a
   * string found here needs no decoding or checking again.
   */
  accepted: (string | undefined)[] | undefined
  /** A number here must be known exactly to be checked. */
  readsNumber: boolean
}

export type FormatLookup = (name: string) => ((s: string) => boolean) | undefined

/** Keywords that only annotate: they change nothing about what is valid. */
const ANNOTATIONS = new Set(['x-error', 'description', 'title', '$id', 'examples'])
const KNOWN = new Set(['type', 'properties', 'required', 'minimum', 'maximum', 'enum', 'const', 'pattern', 'format', 'minLength', 'minItems', 'maxItems', 'items'])
const TYPE_BITS: Record<string, number> = { object: T_OBJECT, array: T_ARRAY, string: T_STRING, number: T_NUMBER | T_INTEGER, integer: T_INTEGER, boolean: T_BOOLEAN, null: T_NULL }

export const ANY: SchemaNode = node(T_ANY)

function node (types: number): SchemaNode {
  return { types, properties: undefined, requiredMask: 0, minimum: undefined, maximum: undefined, choices: undefined, pattern: undefined, format: undefined, byteFormat: undefined, choiceBytes: undefined, minLength: undefined, minItems: undefined, maxItems: undefined, items: undefined, readsString: false, decodes: false, accepted: undefined, readsNumber: false }
}

/**
 * `capture` names top-level members the caller wants back (a string's
 * value, or `true` for any other value), whether or not the schema names them.
 */
export function compileNode (schema: Record<string, unknown>, formats: FormatLookup, capture: readonly string[] = []): SchemaNode {
  for (const keyword of Object.keys(schema)) {
    if (!KNOWN.has(keyword) && !ANNOTATIONS.has(keyword)) throw new Error(`byte schema: keyword ${keyword} is not supported`)
  }
  const out = node(typeBits(schema['type']))
  const choices = schema['const'] !== undefined ? [schema['const']] : schema['enum']
  if (choices !== undefined) {
    if (!Array.isArray(choices) || !choices.every(isPrimitive)) throw new Error('byte schema: enum and const must hold primitives')
    out.choices = choices
    const strings = choices.filter(c => typeof c === 'string')
    if (strings.every(c => /^[\x20-\x7e]*$/.test(c))) out.choiceBytes = strings.map(c => Buffer.from(c, 'latin1'))
    // A value of a type no choice has can match none: refused by its type, before any other check.
    out.types &= choices.reduce<number>((bits, c) => bits | choiceType(c), 0)
  }
  out.minimum = optionalNumber(schema, 'minimum')
  out.maximum = optionalNumber(schema, 'maximum')
  out.minLength = optionalNumber(schema, 'minLength')
  out.minItems = optionalNumber(schema, 'minItems')
  out.maxItems = optionalNumber(schema, 'maxItems')
  if (schema['pattern'] !== undefined) out.pattern = new RegExp(String(schema['pattern']), 'u') // as ajv compiles it
  if (schema['format'] !== undefined) {
    const check = formats(String(schema['format']))
    if (check === undefined) throw new Error(`byte schema: unknown format ${String(schema['format'])}`)
    out.format = check
    out.byteFormat = BYTE_FORMATS[String(schema['format'])]
  }
  if (schema['items'] !== undefined) out.items = compileNode(schema['items'] as Record<string, unknown>, formats)
  const properties = (schema['properties'] ?? {}) as Record<string, Record<string, unknown>>
  const required = (schema['required'] ?? []) as string[]
  if (required.length > 30) throw new Error('byte schema: at most 30 required members')
  const names = new Set([...Object.keys(properties), ...required, ...capture])
  if (names.size > 0) {
    out.properties = [...names].map(name => {
      if (!/^[\x20-\x7e]*$/.test(name) || name.includes('"') || name.includes('\\')) throw new Error(`byte schema: member name ${name} is not plain ASCII`)
      const index = required.indexOf(name)
      const child = properties[name] === undefined ? ANY : compileNode(properties[name]!, formats)
      return { key: Buffer.from(name, 'latin1'), hash: keyHash(name), name, node: child, requiredBit: index < 0 ? 0 : 1 << index, capture: capture.includes(name) }
    })
    // The walk compares a key's bytes with one member's at most: the one of its hash.
    if (new Set(out.properties.map(p => p.hash)).size !== out.properties.length) throw new Error(`byte schema: two member names share a hash among ${[...names].join(', ')}`)
    out.requiredMask = required.reduce((mask, _, i) => mask | (1 << i), 0)
  }
  const stringChoices = out.choices?.some(c => typeof c === 'string') === true
  out.readsString = out.pattern !== undefined || out.format !== undefined || out.minLength !== undefined || stringChoices
  out.decodes = out.pattern !== undefined || (stringChoices && out.choiceBytes === undefined)
  if (out.decodes) out.accepted = new Array<string | undefined>(ACCEPTED_SLOTS).fill(undefined)
  out.readsNumber = out.minimum !== undefined || out.maximum !== undefined || out.choices?.some(c => typeof c === 'number') === true || (out.types & T_NUMBER) === 0
  return out
}

/** Slots of a node's `accepted` strings (a power of two), and the longest string kept there. */
export const ACCEPTED_SLOTS = 64
export const ACCEPTED_MAX_LENGTH = 64

/** Keeps a key's hash a small integer, which V8 compares without boxing. */
export const HASH_MASK = 0x3fffffff

/** The hash the walk computes over a key's bytes as it reads them. */
function keyHash (name: string): number {
  let hash = 0
  for (let i = 0; i < name.length; i++) hash = (Math.imul(hash, 31) + name.charCodeAt(i)) & HASH_MASK
  return hash
}

function typeBits (type: unknown): number {
  if (type === undefined) return T_ANY
  const list = Array.isArray(type) ? type : [type]
  let bits = 0
  for (const t of list) {
    const b = TYPE_BITS[String(t)]
    if (b === undefined) throw new Error(`byte schema: unknown type ${String(t)}`)
    bits |= b
  }
  return bits
}

function optionalNumber (schema: Record<string, unknown>, keyword: string): number | undefined {
  const v = schema[keyword]
  if (v === undefined) return undefined
  if (typeof v !== 'number') throw new Error(`byte schema: ${keyword} must be a number`)
  return v
}

function choiceType (c: Primitive): number {
  if (c === null) return T_NULL
  if (typeof c === 'string') return T_STRING
  if (typeof c === 'boolean') return T_BOOLEAN
  return T_NUMBER | T_INTEGER
}

function isPrimitive (v: unknown): v is Primitive {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
}
