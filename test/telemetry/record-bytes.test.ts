import t from 'tap'
import { readFileSync } from 'node:fs'
import type { OutgoingMessage, Splice } from '../../src/bus/index.js'
import { recordChecks, spliceMessage, toMessage, type AssetTrackingData } from '../../src/telemetry/record.js'
import { METRICS_SCHEMA } from '../../src/telemetry/schema.js'

const { acceptedAssetId, recordErrors } = recordChecks([METRICS_SCHEMA])

/**
 * The hot path (acceptedAssetId, reading bytes) against the full path
 * (JSON.parse, then recordErrors): the first may leave any body to the
 * second, but must never accept one the second refuses. The bodies are the
 * same on every run; FUZZ_SEED and FUZZ_BODIES draw others, to look further.
 */
const SEED = Number(process.env['FUZZ_SEED'] ?? 15)
const BODIES = Number(process.env['FUZZ_BODIES'] ?? 40_000)

const fixture = readFileSync(new URL('../fixtures/asset-track.json', import.meta.url))
const example = JSON.parse(fixture.toString()) as AssetTrackingData
const headers = { 'content-type': 'application/json', 'x-request-id': 'req-1', 'x-request-timestamp': '1763799330' }

/** The bytes the produce encoder writes for a value. */
const published = (value: OutgoingMessage['value']): Buffer =>
  typeof value === 'string' ? Buffer.from(value) : Buffer.isBuffer(value) ? value : Buffer.concat([value.bytes.subarray(0, value.end), Buffer.from(value.tail)])
const receipt = { clientId: 'fleet-1', requestId: 'req-1', receivedAt: '2026-11-22T08:15:31.000Z', tenantKey: 'fleet-1' }

/** What the full path says: the asset_id of an accepted body, or undefined. */
function fullPath (raw: Buffer, hdrs: Record<string, string> = headers): string | undefined {
  let record: unknown
  try {
    record = JSON.parse(raw.toString('utf8'))
  } catch {
    return undefined
  }
  if (Object.keys(recordErrors(record, hdrs, raw)).length > 0) return undefined
  const r = record as AssetTrackingData
  // The hot path also leaves to the full path a body holding a member the gateway adds.
  return 'client_id' in r || 'received_at' in r || 'request_id' in r ? undefined : r.asset_id
}

/** mulberry32: the same bodies on every run, so a failure can be replayed. */
function random (seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

const VALUES: unknown[] = [
  0, -0, 1, -1, 2021.5, 90, -90, 90.00000000000001, 180, 360, 3, -3, 5, 10, -10.000001, 250, 20000, 1e21, 1e-7, 2 ** 53 + 2, 0.1,
  '', ' ', 'x', 'truck-1', 'svc.metrics@1.0', 'engine.rpm', 'Engine.Rpm', 'a.b.c.d.e.f.g', 'low', 'medium', 'ok', 'obd2', 'nope',
  '2026-11-22T08:15:30Z', '2026-11-22T08:15:30+01', '2026-11-22T08:15:30', '2026-02-30T00:00:00Z', '2026-11-22 08:15:30Z', '2026-11-22T23:59:60Z',
  '\u00e9', '\u0000', '\u007f', '\ud800', 'a\\b"c', '\n', true, false, null, {}, [], [1, 2], { k: 'engine.rpm', v: 1 }, { x: { y: { z: [] } } }
]
const NUMBERS = ['0', '-0', '1E400', '-1e309', '1e-400', '0.1e1', '01', '1.', '.5', '1e', '-', '+1', '9007199254740993', '90.00000000000000001',
  '89.99999999999999999', '4.9e-324', '1.7976931348623157e308', '1.7976931348623159e308', '2021.0', '2021e0', '1E+2', '0.0000000000000000000000001e25',
  '9223372036854775807', '9223372036854775808', '-9223372036854775808', '-9223372036854775809', '99999999999999999999', '1e19', '9223372036854775808.0']
const SPLICES = ['"', '\\', '{', '}', '[', ']', ',', ':', '0', '9', 'e', '-', '.', ' ', '\n', '\t', '\u0000', '\u00e9', '\\u0041', '"asset_id":"z",', 'true', 'null', '\\ud800', '\\uDC00', '\\ud83d\\ude00']

function pick<T> (rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)]!
}

/** A random member path in `value`, as the containers along it and the last key. */
function somewhere (rand: () => number, value: unknown): { parent: Record<string, unknown> | unknown[], key: string | number } | undefined {
  let parent: Record<string, unknown> | unknown[] | undefined
  let key: string | number | undefined
  let here = value
  while (typeof here === 'object' && here !== null && (parent === undefined || rand() < 0.7)) {
    const keys: Array<string | number> = Array.isArray(here) ? here.map((_, i) => i) : Object.keys(here)
    if (keys.length === 0) break
    parent = here as Record<string, unknown> | unknown[]
    key = pick(rand, keys)
    here = (parent as Record<string | number, unknown>)[key]
  }
  return parent === undefined ? undefined : { parent, key: key! }
}

function mutate (rand: () => number): Buffer {
  const record = structuredClone(example) as unknown as Record<string, unknown>
  for (let n = 1 + Math.floor(rand() * 3); n > 0; n--) {
    const at = somewhere(rand, record)
    if (at === undefined) continue
    const p = at.parent as Record<string | number, unknown>
    const roll = rand()
    if (roll < 0.6) p[at.key] = structuredClone(pick(rand, VALUES))
    else if (roll < 0.75 && !Array.isArray(p)) delete p[at.key]
    else if (roll < 0.9) p[pick(rand, ['asset_id', 'client_id', 'request_id', 'k', 'v', 'x', 'timestamp', 'schema'])] = structuredClone(pick(rand, VALUES))
    else p[at.key] = [p[at.key]]
  }
  let text = JSON.stringify(record, null, rand() < 0.5 ? undefined : Math.floor(rand() * 3))
  const edits = rand() < 0.5 ? 0 : 1 + Math.floor(rand() * 2)
  for (let n = 0; n < edits; n++) {
    const roll = rand()
    const at = Math.floor(rand() * text.length)
    if (roll < 0.3) {
      // A number written another way.
      const numbers = [...text.matchAll(/-?\d+(\.\d+)?([eE][+-]?\d+)?/g)]
      if (numbers.length > 0) {
        const m = pick(rand, numbers)
        text = text.slice(0, m.index) + pick(rand, NUMBERS) + text.slice(m.index! + m[0].length)
      }
    } else if (roll < 0.55) {
      text = text.slice(0, at) + pick(rand, SPLICES) + text.slice(at)
    } else if (roll < 0.75) {
      text = text.slice(0, at) + text.slice(at + 1 + Math.floor(rand() * 3))
    } else if (roll < 0.85) {
      // A member given again: the same key, later in the same object.
      const key = pick(rand, ['asset_id', 'timestamp', 'gps', 'year', 'latitude', 'k', 'schema'])
      const first = text.indexOf(`"${key}"`)
      const close = first < 0 ? -1 : text.indexOf('}', first)
      if (close > 0) text = `${text.slice(0, close)},"${key}":${JSON.stringify(pick(rand, VALUES))}${text.slice(close)}`
    } else {
      text = text.slice(0, at)
    }
  }
  const raw = Buffer.from(text)
  // A byte that is not UTF-8 at all, now and then.
  if (rand() < 0.05 && raw.length > 0) raw[Math.floor(rand() * raw.length)] = pick(rand, [0xff, 0x80, 0xc3, 0xed])
  return raw
}

t.test('the fixture takes the hot path, and both paths publish the same message', async t => {
  t.equal(acceptedAssetId(headers, fixture), 'truck-0042')
  t.equal(fullPath(fixture), 'truck-0042')
  const hot = spliceMessage('truck-0042', fixture, receipt)
  const full = toMessage(example, fixture.toString(), receipt)
  t.same({ ...hot, value: undefined }, { ...full, value: undefined }, 'key and headers')
  t.ok(published(hot.value).equals(published(full.value)), 'the value, byte for byte')
  t.equal((hot.value as Splice).bytes, fixture, 'the received bytes themselves, not a copy')
  t.same(JSON.parse(published(hot.value).toString()), { ...example, client_id: 'fleet-1', received_at: '2026-11-22T08:15:31.000Z', request_id: 'req-1' })
})

t.test('a body that is not UTF-8 is published as the text JSON.parse read, not as its bytes', async t => {
  const raw = Buffer.from(JSON.stringify({ ...example, owner: 'Acme xx' }))
  raw[raw.indexOf('xx')] = 0xff
  t.equal(acceptedAssetId(headers, raw), 'truck-0042', 'the hot path takes it: nothing reads that string')
  const value = spliceMessage('truck-0042', raw, receipt).value
  t.equal(typeof value, 'string')
  t.match(value, /"owner":"Acme \ufffdx"/)
  t.ok(published(value).equals(published(toMessage(JSON.parse(raw.toString()), raw.toString(), receipt).value)))
})

t.test('a header problem leaves the request to the full path', async t => {
  for (const [name, value] of [['content-type', 'text/plain'], ['x-request-id', ''], ['x-request-timestamp', '2026-01-01']]) {
    t.equal(acceptedAssetId({ ...headers, [name!]: value! }, fixture), undefined, `${name}: ${value}`)
  }
  t.equal(acceptedAssetId({ ...headers, 'x-request-id': undefined as unknown as string }, fixture), undefined, 'no x-request-id')
})

t.test('an asset_id that is no label leaves the request to the full path', async t => {
  const body = (id: string): Buffer => Buffer.from(JSON.stringify({ ...example, asset_id: id }))
  t.equal(acceptedAssetId(headers, body('x'.repeat(257))), undefined, 'too long')
  t.equal(acceptedAssetId(headers, body('a\u007fb')), undefined, 'a control character')
  t.equal(acceptedAssetId(headers, body('x'.repeat(256))), 'x'.repeat(256), 'at the limit')
})

t.test('the hot path never accepts what the full path refuses', async t => {
  const rand = random(SEED)
  let accepted = 0
  let both = 0
  let disagreements = 0
  for (let n = 0; n < BODIES; n++) {
    const raw = mutate(rand)
    const fast = acceptedAssetId(headers, raw)
    const full = fullPath(raw)
    if (full !== undefined) accepted++
    if (fast === undefined) continue
    both++
    if (fast !== full && disagreements++ < 5) t.fail(`accepted by the hot path only: ${JSON.stringify(raw.toString('latin1'))}`)
    const text = raw.toString()
    if (fast === full && !published(spliceMessage(fast, raw, receipt).value).equals(published(toMessage(JSON.parse(text), text, receipt).value)) && disagreements++ < 5) {
      t.fail(`the paths publish different bytes for ${JSON.stringify(raw.toString('latin1'))}`)
    }
  }
  t.equal(disagreements, 0, 'no body is accepted by the hot path and refused by the full path, and both publish the same bytes')
  // The mix must hold both kinds, and the hot path must take most valid bodies, or this proves little.
  t.ok(accepted > BODIES * 0.1 && accepted < BODIES * 0.9, `the full path accepted ${accepted} of ${BODIES}`)
  t.ok(both > accepted * 0.6, `the hot path took ${both} of the ${accepted} valid bodies`)
})
