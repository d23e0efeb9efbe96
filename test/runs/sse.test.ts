import t from 'tap'
import type { RequestContext } from '../../src/http/index.js'
import { SseStream } from '../../src/runs/sse.js'
import type { RunEvent } from '../../src/runs/index.js'

/** A response whose socket takes only comments (the opening line) until `drain`, then everything (a reader that starts reading). */
function stalledSocket (): { ctx: RequestContext, written: string[], ended: () => boolean, drain: () => void } {
  const written: string[] = []
  let ended = false
  let writable: (() => boolean) | undefined
  let taking = false
  const ctx = {
    writeHead () {},
    write (chunk: string) { written.push(chunk); return taking || chunk.startsWith(':') },
    onWritable (handler: () => boolean) { writable = handler },
    onAbort () {},
    end () { ended = true }
  } as unknown as RequestContext
  return { ctx, written, ended: () => ended, drain: () => { taking = true; writable?.() } }
}

const event = (id: number, size: number): RunEvent => ({ id, type: 'run.step', json: JSON.stringify({ id: String(id), pad: 'x'.repeat(size) }) })

t.test('an event larger than HARNESS_SSE_BUFFER is still streamed to a subscriber that is keeping up', async t => {
  const socket = stalledSocket()
  const sse = new SseStream(socket.ctx, 'run-1', 1024, 60_000, 0)
  t.teardown(() => sse.end())
  sse.event(event(1, 5000))
  t.notOk(sse.closed, 'queued whole, not cut off: a reconnect from Last-Event-ID 0 would meet the same event again')
  t.ok(socket.written.some(w => w.startsWith('id: 1\n')), 'the event was written')
  t.notOk(socket.written.some(w => w.includes('stream_overflow')))
  socket.drain()
  sse.event(event(2, 10))
  t.notOk(sse.closed, 'once the socket took it, the stream goes on')
})

t.test('a subscriber already behind overflows as before, at the last id sent', async t => {
  const socket = stalledSocket()
  const sse = new SseStream(socket.ctx, 'run-1', 1024, 60_000, 0)
  t.teardown(() => sse.end())
  sse.event(event(1, 5000))
  sse.event(event(2, 10))
  t.ok(sse.closed, 'a second event while the first is still queued past the buffer')
  t.match(socket.written.at(-1), /"error":"stream_overflow","run_id":"run-1","last_event_id":2/)
  t.ok(socket.ended())
})

t.test('small events past the buffer overflow a subscriber that does not read', async t => {
  const socket = stalledSocket()
  const sse = new SseStream(socket.ctx, 'run-1', 1024, 60_000, 0)
  t.teardown(() => sse.end())
  for (let id = 1; id <= 30 && !sse.closed; id++) sse.event(event(id, 100))
  t.ok(sse.closed, 'cut off once more than the buffer is queued')
})
