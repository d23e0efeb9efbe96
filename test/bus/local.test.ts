import { spawn } from 'node:child_process'
import t from 'tap'
import { LocalBus, type BusMessage } from '../../src/bus/index.js'
import { openState } from '../../src/state/index.js'

const msg = (i: number, value: string | Buffer = `v${i}`): BusMessage => ({ key: `k${i}`, value, headers: { n: String(i) } })

function open (t: { testdir: () => string, teardown: (fn: () => unknown) => void }): { bus: LocalBus, dir: string } {
  const dir = t.testdir()
  const state = openState(dir)
  t.teardown(() => state.close())
  return { bus: new LocalBus(state), dir }
}

t.test('messages of several batches read back in order with dense offsets', async t => {
  const { bus } = open(t)
  const before = Date.now()
  await bus.publish('a', [msg(0), msg(1), msg(2)])
  await bus.publish('a', [msg(3, Buffer.from([0, 255, 1]))])
  await bus.publish('a', [msg(4), msg(5)])
  const read = [...bus.read('a')]
  t.same(read.map(m => m.offset), [0, 1, 2, 3, 4, 5])
  t.same(read.map(m => m.key), ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'])
  t.same(read.map(m => m.headers['n']), ['0', '1', '2', '3', '4', '5'])
  t.equal(read[0]!.value, 'v0')
  t.ok(Buffer.isBuffer(read[3]!.value), 'a Buffer value comes back as a Buffer')
  t.same([...(read[3]!.value as Buffer)], [0, 255, 1])
  t.ok(read.every(m => m.topic === 'a' && m.timestamp >= before && m.timestamp <= Date.now()))
})

t.test('a Splice value is stored as its text: the bytes up to its end, then its tail', async t => {
  const { bus } = open(t)
  const bytes = Buffer.from('{"a":"é"}   ignored')
  await bus.publish('a', [{ key: 'k', value: { bytes, end: bytes.indexOf('}'), tail: ',"b":"✓"}' }, headers: {} }])
  t.equal([...bus.read('a')][0]!.value, '{"a":"é","b":"✓"}')
})

t.test('reads from any offset, inside a batch or at its edges, and stop at the limit', async t => {
  const { bus } = open(t)
  await bus.publish('a', [msg(0), msg(1), msg(2)])
  await bus.publish('a', [msg(3), msg(4)])
  const offsets = (from: number, limit?: number): number[] => [...bus.read('a', from, limit)].map(m => m.offset)
  t.same(offsets(1), [1, 2, 3, 4], 'from inside the first batch')
  t.same(offsets(2), [2, 3, 4], 'from the last message of a batch')
  t.same(offsets(3), [3, 4], 'from the first message of a batch')
  t.same(offsets(5), [], 'past the end')
  t.same(offsets(1, 3), [1, 2, 3], 'the limit spans batches')
  t.same(offsets(0, 0), [])
})

t.test('topics are separate logs; an empty publish appends nothing', async t => {
  const { bus } = open(t)
  await bus.publish('a', [msg(0)])
  await bus.publish('b', [])
  await bus.publish('b', [msg(1), msg(2)])
  await bus.publish('a', [msg(3)])
  t.same([...bus.read('a')].map(m => [m.offset, m.key]), [[0, 'k0'], [1, 'k3']])
  t.same([...bus.read('b')].map(m => [m.offset, m.key]), [[0, 'k1'], [1, 'k2']])
  t.same([...bus.read('c')], [])
})

t.test('concurrent publishes get disjoint, dense offsets in call order', async t => {
  const { bus } = open(t)
  await Promise.all(Array.from({ length: 20 }, (_, i) => bus.publish('a', [msg(2 * i), msg(2 * i + 1)])))
  t.same([...bus.read('a')].map(m => [m.offset, m.key]), Array.from({ length: 40 }, (_, i) => [i, `k${i}`]))
})

const BATCHES = 100
const APPENDER = `
const [busUrl, stateUrl, dir, name] = process.argv.slice(1)
const { LocalBus } = await import(busUrl)
const { openState } = await import(stateUrl)
const state = openState(dir)
const bus = new LocalBus(state)
for (let i = 0; i < ${BATCHES}; i++) await bus.publish('a', [0, 1, 2].map(j => ({ key: name, value: name + ':' + (3 * i + j), headers: {} })))
await state.close()
`

// The loss this guards against is a race (src/state/lmdb.ts): with
// overlappingSync on, this lost a batch in 1 of 12 runs on a quiet machine.
t.test('four processes appending to one DATA_DIR interleave whole batches, offsets dense', async t => {
  const dir = t.testdir()
  const dist = (path: string): string => new URL(`../../dist/${path}`, import.meta.url).href
  const names = ['w', 'x', 'y', 'z']
  const append = (name: string): Promise<number | null> => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', APPENDER, dist('bus/index.js'), dist('state/index.js'), dir, name], { stdio: 'inherit' })
    return new Promise(resolve => child.once('exit', resolve))
  }
  t.same(await Promise.all(names.map(append)), names.map(() => 0))
  const state = openState(dir)
  t.teardown(() => state.close())
  const read = [...new LocalBus(state).read('a')]
  t.same(read.map(m => m.offset), Array.from({ length: 3 * BATCHES * names.length }, (_, i) => i), 'dense')
  for (const name of names) {
    t.same(read.filter(m => m.key === name).map(m => m.value), Array.from({ length: 3 * BATCHES }, (_, i) => `${name}:${i}`), `${name}'s messages in its order`)
  }
  const mixed = Array.from({ length: BATCHES * names.length }, (_, b) => read.slice(3 * b, 3 * b + 3)).filter(batch => new Set(batch.map(m => m.key)).size !== 1)
  t.same(mixed, [], 'every batch is whole')
})

t.test('a subscription gets what is appended after it started (or everything, from the start), in order; caughtUp waits for the end', async t => {
  const { bus } = open(t)
  await bus.publish('a', [msg(0), msg(1)])
  const fromEnd: number[] = []
  const fromStart: number[] = []
  const later = bus.subscribe('a', { group: 'g', fromStart: false }, async ms => { fromEnd.push(...ms.map(m => m.offset)) })
  const all = bus.subscribe('a', { group: 'g', fromStart: true }, async ms => { fromStart.push(...ms.map(m => m.offset)) })
  t.teardown(async () => { await later.stop(); await all.stop() })
  for (let i = 2; i < 1200; i += 3) await bus.publish('a', [msg(i), msg(i + 1), msg(i + 2)])
  await bus.publish('b', [msg(0)])
  t.equal(await all.caughtUp(10_000), true)
  t.equal(await later.caughtUp(10_000), true)
  t.same(fromStart, Array.from({ length: 1202 }, (_, i) => i), 'from the start: every message once, in order')
  t.same(fromEnd, Array.from({ length: 1200 }, (_, i) => i + 2), 'from the end: what came after, once, in order')
})

t.test('a batch whose handler fails is handed again; caughtUp is false until it is taken', async t => {
  const { bus } = open(t)
  let fail = true
  const seen: number[] = []
  const sub = bus.subscribe('a', { group: 'g', fromStart: true }, async ms => {
    if (fail) throw new Error('not now')
    seen.push(...ms.map(m => m.offset))
  })
  t.teardown(() => sub.stop())
  await bus.publish('a', [msg(0), msg(1)])
  t.equal(await sub.caughtUp(200), false, 'not handled while the handler fails')
  fail = false
  t.equal(await sub.caughtUp(10_000), true)
  t.same(seen, [0, 1])
})
