import fc from 'fast-check'

/**
 * Values an attacker puts in a JSON body, and a way to write JSON that
 * JSON.stringify cannot: a key twice in one object, a number no double
 * holds, nesting thousands deep.
 */

/** JSON text spliced in as is. */
export class RawJson {
  constructor (readonly text: string) {}
  toString (): string { return `Raw(${this.text.length > 60 ? `${this.text.slice(0, 60)}…` : this.text})` }
}

/** An object as a list of members, so a key can come twice. */
export class Members {
  constructor (readonly members: ReadonlyArray<readonly [string, unknown]>) {}
}

/** JSON text of `value`, RawJson and Members included. */
export function render (value: unknown): string {
  if (value instanceof RawJson) return value.text
  if (value instanceof Members) return `{${value.members.map(([k, v]) => `${JSON.stringify(k)}:${render(v)}`).join(',')}}`
  if (Array.isArray(value)) return `[${value.map(render).join(',')}]`
  if (typeof value === 'object' && value !== null) return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${render(v)}`).join(',')}}`
  if (value === undefined) return 'null'
  return JSON.stringify(value)
}

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map(c => String.fromCharCode(c))

/** Strings that have broken parsers, paths, logs and key spaces. */
export const HOSTILE_STRINGS: readonly string[] = [
  '', ' ', '\t', '\u0000', 'a\u0000b', '\ud800', 'a\udfffb', '\udc00\ud800', '\u202eexe.4pm', '\u200b', '\ufeff', '\u0085', '\u00a0',
  '..', '.', '../..', '../../../../tmp/x', '..\\..\\windows', '%2f', '%2e%2e%2f', '..%2f..%2f', 'a/../b', '/', '//host/x', '\\', '~', 'a~b',
  'CON', 'nul', 'x'.repeat(128), 'x'.repeat(129), 'x'.repeat(256), 'x'.repeat(257), 'é'.repeat(300), '\r\n', 'a\nb', '\u001b[31m',
  '😀'.repeat(130), '\u{10ffff}', '${jndi:ldap://127.0.0.1/x}', "'; DROP TABLE runs; --", '<script>', '__proto__', 'constructor',
  'NaN', 'Infinity', '1e309', 'null', 'true', '-0', 'evt-ok', 'cam-3', 'engine.rpm'
]

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...HOSTILE_STRINGS), weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 24 }), weight: 2 },
  { arbitrary: fc.string({ unit: fc.oneof(loneSurrogate, fc.constantFrom('a', '/', '.', '\u0000', '\u202e')), minLength: 1, maxLength: 8 }), weight: 1 },
  { arbitrary: fc.integer({ min: 1_000, max: 70_000 }).map(n => 'x'.repeat(n)), weight: 1 }
)

/** Numbers at and just past the bounds the spec and the docs name, and the extremes of a double. */
export const BOUND_NUMBERS: readonly number[] = [
  0, -0, 1, -1, 3, -3, 3.0000000000000004, -3.0000000000000004, 5, 5.000000000000001, 10, -10, 10.000000000000002,
  90, -90, 90.00000000000001, 91, 180, -180.00000000000003, 360, 360.00000000000006, 250, 250.00000000000003, 20000, 20000.000000000004,
  200, 201, 1000, 1001, 1e-7, -1e-7, 0.5, 1.0000000000000002, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2,
  Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, 4294967296, -2147483649
]

/** Number texts JSON.parse takes, or does not, that a double cannot hold or that decoders disagree on. */
export const RAW_NUMBERS: readonly string[] = [
  '1e309', '-1e309', '1E400', `1${'0'.repeat(400)}`, `0.${'0'.repeat(400)}1`, '90.0000000000000000001', '-0.0', '1.0e0',
  '00', '01', '.5', '5.', '+1', 'NaN', 'Infinity', '0x10', '1_000'
]

export const boundNumber: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constantFrom(...BOUND_NUMBERS), weight: 4 },
  { arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 2 },
  { arbitrary: fc.constantFrom(...RAW_NUMBERS).map(t => new RawJson(t)), weight: 2 }
)

/** Nesting of `depth` arrays or objects, as text (a real value that deep would overflow the renderer). */
export function deep (depth: number, kind: 'array' | 'object' = 'array'): RawJson {
  return kind === 'array'
    ? new RawJson(`${'['.repeat(depth)}1${']'.repeat(depth)}`)
    : new RawJson(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)
}

/** Values of any shape a field might wrongly get. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileString, weight: 4 },
  { arbitrary: boundNumber, weight: 4 },
  { arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [null], { '': '' }), weight: 2 },
  { arbitrary: fc.tuple(fc.oneof(fc.integer({ min: 31, max: 40_000 }), fc.constantFrom(32, 33, 5_000, 10_000, 20_000, 30_000)), fc.constantFrom('array' as const, 'object' as const)).map(([d, k]) => deep(d, k)), weight: 1 },
  { arbitrary: fc.integer({ min: 200, max: 20_000 }).map(n => new RawJson(`{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`)), weight: 1 },
  { arbitrary: fc.integer({ min: 199, max: 1_002 }).map(n => new RawJson(`[${Array(n).fill('{"k":"a.b","v":1}').join(',')}]`)), weight: 1 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 2 }
)

export type Path = ReadonlyArray<string | number>

export interface Mutation {
  op: 'set' | 'delete' | 'duplicate' | 'extra'
  path: Path
  value: unknown
}

/**
 * `base` with `mutation` applied: a field set to `value`, deleted, given a
 * second time (the copy holding `value`, which may be the one a last-wins
 * parser keeps), or an extra field beside it. Paths into absent parents
 * create them.
 */
export function mutate (base: unknown, mutation: Mutation): unknown {
  const copy = clone(base)
  const parentPath = mutation.path.slice(0, -1)
  const last = mutation.path[mutation.path.length - 1]!
  let parent: any = copy
  for (const step of parentPath) {
    if (parent instanceof Members) return copy
    if (typeof parent[step] !== 'object' || parent[step] === null) parent[step] = typeof step === 'number' ? [] : {}
    parent = parent[step]
  }
  switch (mutation.op) {
    case 'set': parent[last] = mutation.value; break
    case 'delete': if (Array.isArray(parent)) parent.splice(Number(last), 1); else delete parent[last]; break
    case 'extra': parent[`${String(last)}_extra`] = mutation.value; break
    case 'duplicate': {
      if (Array.isArray(parent)) { parent.push(mutation.value); break }
      const members = Object.entries(parent)
      const holder = parentPath.length === 0 ? undefined : walk(copy, parentPath.slice(0, -1))
      const dup = new Members([...members, [String(last), mutation.value]])
      if (holder === undefined) return dup
      holder[parentPath[parentPath.length - 1]!] = dup
    }
  }
  return copy
}

/** A deep copy that keeps RawJson and Members (immutable) as they are. */
function clone (value: unknown): any {
  if (value instanceof RawJson || value instanceof Members) return value
  if (Array.isArray(value)) return value.map(clone)
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clone(v)]))
  return value
}

function walk (root: any, path: Path): any {
  let at = root
  for (const step of path) at = at[step]
  return at
}

export function mutation (paths: readonly Path[]): fc.Arbitrary<Mutation> {
  return fc.record({
    op: fc.constantFrom<Mutation['op']>('set', 'set', 'set', 'delete', 'duplicate', 'extra'),
    path: fc.constantFrom(...paths),
    value: hostileValue
  })
}
