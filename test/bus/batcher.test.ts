import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import { MicroBatcher, type BatcherOptions } from '../../src/bus/index.js'
import type { OutgoingMessage } from '../../src/bus/index.js'
import type { GatewayError } from '../../src/errors.js'
import { until } from '../helpers/http.js'

const msg = (i: number): OutgoingMessage => ({ key: `k${i % 3}`, value: String(i), headers: {} })

function batcher (overrides: Partial<BatcherOptions> & Pick<BatcherOptions, 'publish'>): MicroBatcher {
  return new MicroBatcher({ maxBatch: 3, lingerMs: 1, maxPending: 100, timeoutMs: 5000, ...overrides })
}

t.test('batches by count, one batch in flight, order kept', async t => {
  const batches: string[][] = []
  let inFlight = 0
  let maxInFlight = 0
  const b = batcher({
    publish: async messages => {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      batches.push(messages.map(m => m.value as string))
      await new Promise(resolve => setImmediate(resolve))
      inFlight--
    }
  })
  await Promise.all(Array.from({ length: 7 }, (_, i) => b.add(msg(i))))
  t.same(batches, [['0', '1', '2'], ['3', '4', '5'], ['6']])
  t.equal(maxInFlight, 1, 'never two sends at once')
  t.equal(b.pending, 0)
})

t.test('a partial batch leaves after the linger time', async t => {
  const batches: number[] = []
  const b = batcher({ maxBatch: 500, lingerMs: 5, publish: async m => { batches.push(m.length) } })
  const p = b.add(msg(1))
  t.same(batches, [], 'not sent synchronously')
  await p
  t.same(batches, [1])
})

t.test('a record whose sender left while it was queued is dropped unsent and told it failed; one already sent is told like the rest', async t => {
  const sends: Array<{ values: string[], ack: () => void }> = []
  const clients = new Map<string, { left: boolean }>()
  const b = batcher({
    maxBatch: 2,
    publish: messages => new Promise(resolve => { sends.push({ values: messages.map(m => m.value as string), ack: resolve }) }),
    abandoned: token => clients.get(token as string)!.left
  })
  const told: string[] = []
  const settled = (token: string, err: GatewayError | undefined): void => { told.push(err === undefined ? token : `${token} ${err.code}`) }
  for (let i = 0; i < 6; i++) {
    clients.set(String(i), { left: false })
    b.submit(msg(i), String(i), settled)
  }
  await until(() => sends.length === 1)
  t.same(sends[0]!.values, ['0', '1'])
  for (const gone of ['1', '2', '4']) clients.get(gone)!.left = true
  t.equal(b.pending, 6)
  sends[0]!.ack()
  await until(() => sends.length === 2)
  t.same(sends[1]!.values, ['3', '5'], '2 and 4 left while queued: passed over, the batch filled from behind them')
  t.equal(b.pending, 2, 'and no longer pending')
  sends[1]!.ack()
  await until(() => b.pending === 0)
  t.same(told, ['0', '1', '2 publish_failed', '4 publish_failed', '3', '5'], '2 and 4 told they failed when passed over; 1 had left after its batch was sent: it is told like the rest')
  t.equal(sends.length, 2)
})

t.test('a failed send fails every record of the batch with the cause', async t => {
  const b = batcher({ publish: async () => { throw new Error('broker unreachable') } })
  const results = await Promise.allSettled([b.add(msg(1)), b.add(msg(2))])
  for (const r of results) {
    t.equal(r.status, 'rejected')
    t.match((r as PromiseRejectedResult).reason, { code: 'publish_failed', status: 500, message: 'Failed to publish message', details: { detail: 'broker unreachable' } })
  }
})

t.test('records time out in flight and in the queue; a full queue is refused with 503', async t => {
  let release: () => void = () => {}
  const b = batcher({ maxBatch: 2, maxPending: 4, timeoutMs: 30, publish: () => new Promise(resolve => { release = resolve }) })
  const first = [b.add(msg(1)), b.add(msg(2))]
  const queued = [b.add(msg(3)), b.add(msg(4))]
  await t.rejects(b.add(msg(5)), { code: 'overloaded', status: 503, headers: { 'retry-after': '1' } })
  for (const p of [...first, ...queued]) await t.rejects(p, { code: 'publish_failed', details: { detail: 'no acknowledgment within 30 ms' } })
  t.equal(b.pending, 2, 'the in-flight send still counts until the broker answers')
  release()
  await b.drain()
  t.equal(b.pending, 0)
})

t.test('an acknowledgment after the timeout does not answer twice', async t => {
  let release: () => void = () => {}
  const b = batcher({ timeoutMs: 20, publish: () => new Promise(resolve => { release = resolve }) })
  const p = b.add(msg(1))
  await t.rejects(p, { code: 'publish_failed' })
  release()
  await b.drain()
  t.equal(b.pending, 0)
})

t.test('push: no promise; failed gets each refused, failed or timed-out record once, with the record', async t => {
  const failures: Array<[string, string]> = []
  const failed = (err: GatewayError, m: OutgoingMessage): void => { failures.push([err.code, m.value as string]) }
  let fail = false
  const b = batcher({ maxPending: 3, publish: async () => { if (fail) throw new Error('broker unreachable') } })
  b.push(msg(0), failed)
  await b.drain()
  t.same(failures, [], 'an acknowledged record calls nothing')
  fail = true
  b.push(msg(1), failed)
  b.push(msg(2), failed)
  b.push(msg(3), failed)
  b.push(msg(4), failed)
  t.same(failures, [['overloaded', '4']], 'refused at once when full')
  await b.drain()
  t.same(failures.slice(1), [['publish_failed', '1'], ['publish_failed', '2'], ['publish_failed', '3']])
})

t.test('a publish never acknowledged fails its records at their deadline, not before', async t => {
  // Faked timers and clock: the deadline is crossed by a tick, not waited out.
  const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
  t.teardown(() => clock.uninstall())
  const stuck = batcher({ timeoutMs: 20, publish: () => new Promise(() => {}) })
  const timedOut: string[] = []
  stuck.push(msg(5), (err, m) => { timedOut.push(`${err.code} ${m.value as string}`) })
  await clock.tickAsync(19)
  t.same(timedOut, [], '1 ms before the deadline: still waiting')
  await clock.tickAsync(1)
  t.same(timedOut, ['publish_failed 5'], 'at the deadline: failed')
})

t.test('while refuse() gives an error, records fail with it at once: new ones and queued ones, never sent', async t => {
  const { GatewayError } = await import('../../src/errors.js')
  let down: string | undefined
  let release: () => void = () => {}
  let firstSent: () => void = () => {}
  const sending = new Promise<void>(resolve => { firstSent = resolve })
  const sent: string[] = []
  const b = batcher({
    maxBatch: 2,
    timeoutMs: 60_000,
    refuse: () => down === undefined ? undefined : new GatewayError('bus_unavailable', 'Failed to publish message', { details: { detail: down } }),
    publish: async messages => {
      sent.push(...messages.map(m => m.value as string))
      if (sent.length === 1) {
        firstSent()
        await new Promise<void>(resolve => { release = resolve })
      }
    }
  })
  const inFlight = b.add(msg(0))
  await sending
  const queued = [b.add(msg(1)), b.add(msg(2)), b.add(msg(3))]
  down = 'broker gone'
  await t.rejects(b.add(msg(4)), { code: 'bus_unavailable', details: { detail: 'broker gone' } }, 'a new record is refused without waiting')
  release()
  await inFlight
  for (const q of queued) await t.rejects(q, { code: 'bus_unavailable' }, 'a queued record is refused when its batch would leave')
  t.same(sent, ['0'], 'only the batch already in flight was sent')
  t.equal(b.pending, 0)
  down = undefined
  await b.add(msg(5))
  t.same(sent, ['0', '5'], 'sends again once the bus is up')
})

t.test('submit: one shared function told once per record, with its token; a refusal is returned, never told', async t => {
  const told: Array<[number, string | undefined]> = []
  const settled = (token: number, err: GatewayError | undefined): void => { told.push([token, err?.code]) }
  let fail = false
  const b = batcher({ maxPending: 2, publish: async () => { if (fail) throw new Error('broker unreachable') } })
  t.equal(b.submit(msg(0), 0, settled), undefined, 'queued')
  t.same(told, [], 'not told synchronously')
  await b.drain()
  t.same(told, [[0, undefined]], 'told once, without an error, when acknowledged')
  fail = true
  b.submit(msg(1), 1, settled)
  b.submit(msg(2), 2, settled)
  t.match(b.submit(msg(3), 3, settled), { code: 'overloaded', status: 503 }, 'refused at once when full')
  await b.drain()
  t.same(told.slice(1), [[1, 'publish_failed'], [2, 'publish_failed']], 'each failed record told once; the refused one never')

  // Faked timers: the deadline is crossed, and then far passed, by ticks rather than a sleep.
  const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
  t.teardown(() => clock.uninstall())
  const stuck = batcher({ timeoutMs: 20, publish: () => new Promise(() => {}) })
  const timedOut: Array<[number, string | undefined]> = []
  stuck.submit(msg(4), 4, (token: number, err) => { timedOut.push([token, err?.code]) })
  await clock.tickAsync(60)
  t.same(timedOut, [[4, 'publish_failed']], 'a timed-out record is told once')
})

t.test('maxInFlight: the next batch leaves while the one before waits; sends stay in order, each batch answered on its own ack', async t => {
  const sends: Array<{ values: string[], ack: () => void }> = []
  const b = batcher({ maxBatch: 2, maxInFlight: 2, publish: messages => new Promise(resolve => { sends.push({ values: messages.map(m => m.value as string), ack: resolve }) }) })
  const told: string[] = []
  const settled = (token: string, err: GatewayError | undefined): void => { told.push(`${token}${err ? ` ${err.code}` : ''}`) }
  for (let i = 0; i < 6; i++) b.submit(msg(i), String(i), settled)
  t.same(sends.map(s => s.values), [['0', '1'], ['2', '3']], 'two batches in flight, in order; the third waits')
  sends[1]!.ack()
  await new Promise(resolve => setImmediate(resolve))
  t.same(told, ['2', '3'], 'the second batch is answered on its own acknowledgment')
  t.same(sends.map(s => s.values), [['0', '1'], ['2', '3'], ['4', '5']], 'and the queued batch leaves at once')
  t.equal(b.pending, 4)
  sends[0]!.ack()
  sends[2]!.ack()
  await b.drain()
  t.same(told, ['2', '3', '0', '1', '4', '5'])
  t.equal(b.pending, 0)
})

t.test('maxInFlight: a timeout fails the records of every batch in flight', async t => {
  const b = batcher({ maxBatch: 1, maxInFlight: 3, timeoutMs: 20, publish: () => new Promise(() => {}) })
  const results = await Promise.allSettled([b.add(msg(1)), b.add(msg(2)), b.add(msg(3))])
  t.same(results.map(r => r.status), ['rejected', 'rejected', 'rejected'])
})

t.test('one in flight: what queued behind it leaves when full or when its oldest has lingered, not at the acknowledgment', async t => {
  const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
  t.teardown(() => clock.uninstall())
  const sends: Array<{ values: string[], at: number, ack: () => void }> = []
  const b = batcher({ maxBatch: 4, lingerMs: 5, publish: messages => new Promise(resolve => { sends.push({ values: messages.map(m => m.value as string), at: Date.now(), ack: resolve }) }) })
  const start = Date.now()
  b.push(msg(0), () => undefined)
  await clock.tickAsync(5)
  t.same(sends.map(s => s.values), [['0']], 'the first leaves after its linger')
  b.push(msg(1), () => undefined)
  await clock.tickAsync(1)
  b.push(msg(2), () => undefined)
  await clock.tickAsync(1)
  sends[0]!.ack()
  await clock.tickAsync(0)
  t.equal(sends.length, 1, 'acknowledged 2 ms after the oldest queued: it lingers on')
  await clock.tickAsync(2)
  t.equal(sends.length, 1)
  await clock.tickAsync(1)
  t.same(sends.map(s => [s.values, s.at - start]), [[['0'], 5], [['1', '2'], 10]], 'sent once the oldest has waited 5 ms')
  for (let i = 3; i < 7; i++) b.push(msg(i), () => undefined)
  sends[1]!.ack()
  await clock.tickAsync(0)
  t.same(sends[2]!.values, ['3', '4', '5', '6'], 'a full batch leaves at the acknowledgment')
  b.push(msg(7), () => undefined)
  await clock.tickAsync(7)
  sends[2]!.ack()
  await clock.tickAsync(0)
  t.same(sends[3]?.values, ['7'], 'one that has lingered past its time leaves at the acknowledgment')
})

t.test('several in flight: a freed slot takes what queued at once', async t => {
  const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
  t.teardown(() => clock.uninstall())
  const sends: Array<{ values: string[], ack: () => void }> = []
  const b = batcher({ maxBatch: 2, lingerMs: 5, maxInFlight: 2, publish: messages => new Promise(resolve => { sends.push({ values: messages.map(m => m.value as string), ack: resolve }) }) })
  for (let i = 0; i < 5; i++) b.push(msg(i), () => undefined)
  await clock.tickAsync(0)
  t.same(sends.map(s => s.values), [['0', '1'], ['2', '3']])
  sends[0]!.ack()
  await clock.tickAsync(0)
  t.same(sends.map(s => s.values), [['0', '1'], ['2', '3'], ['4']], 'no linger behind a full window')
})

t.test('a wall clock stepped back stretches neither a linger nor a deadline', async t => {
  const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
  t.teardown(() => clock.uninstall())
  const sends: Array<{ values: string[], ack: () => void }> = []
  const failed: string[] = []
  const b = batcher({ maxBatch: 10, lingerMs: 5, timeoutMs: 100, publish: messages => new Promise(resolve => { sends.push({ values: messages.map(m => m.value as string), ack: resolve }) }) })
  b.push(msg(0), (_err, m) => { failed.push(m.value as string) })
  await clock.tickAsync(5)
  b.push(msg(1), (_err, m) => { failed.push(m.value as string) })
  clock.setSystemTime(Date.now() - 60_000)
  sends[0]!.ack()
  await clock.tickAsync(5)
  t.same(sends.map(s => s.values), [['0'], ['1']], 'the queued batch left after its linger')
  await clock.tickAsync(95)
  t.same(failed, ['1'], 'the unacknowledged one failed at its deadline')
})

t.test('submitAll admits records together or not at all', async t => {
  const sent: string[][] = []
  const batcher = new MicroBatcher({ maxBatch: 10, lingerMs: 0, maxPending: 3, timeoutMs: 1000, publish: async messages => { sent.push(messages.map(m => m.key)) } })
  const settled: Array<[string, string | undefined]> = []
  const done = (token: string, err: { code: string } | undefined) => { settled.push([token, err?.code]) }
  const message = (key: string) => ({ key, value: '{}', headers: {} })
  t.equal(batcher.submitAll([message('a'), message('b'), message('c'), message('d')], ['a', 'b', 'c', 'd'], done)?.code, 'overloaded', 'four would pass the bound of three')
  t.equal(batcher.pending, 0, 'none of them was queued')
  t.equal(batcher.submitAll([message('a'), message('b')], ['a', 'b'], done), undefined)
  t.equal(batcher.submitAll([message('c'), message('d')], ['c', 'd'], done)?.code, 'overloaded', 'two more would pass it too')
  await batcher.drain()
  t.same(sent, [['a', 'b']])
  t.same(settled, [['a', undefined], ['b', undefined]])
})
