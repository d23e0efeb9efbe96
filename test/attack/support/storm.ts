import { connect, type Socket } from 'node:net'
import { exchange, encode, parseAnswer, type Outcome, type RawRequest } from './wire.js'

/**
 * Attacks that last (connections that trickle, storms of requests) and the
 * honest client measured while they run: its statuses are what a test
 * asserts; its latencies are printed, never asserted.
 */

/** An answer later than this is a hang, not a slow machine. */
export const ANSWER_BOUND_MS = 30_000

export interface Honest {
  name: string
  port: number
  request: () => RawRequest
  /** Local address to send each request from (loopback has all of 127/8). */
  from?: () => string
}

export interface HonestFigures {
  name: string
  statuses: Record<string, number>
  /** Milliseconds, sorted. */
  latencies: number[]
}

/** One exchange from a chosen local address. */
export async function sendFrom (port: number, req: RawRequest, localAddress: string | undefined, timeoutMs = ANSWER_BOUND_MS): Promise<Outcome> {
  return exchange(port, encode(req), timeoutMs, false, localAddress)
}

/** Sends the honest requests one after another, each client on its own, until `until` resolves. */
export async function measure (clients: readonly Honest[], until: Promise<unknown>, pauseMs = 100): Promise<HonestFigures[]> {
  let over = false
  void until.then(() => { over = true })
  return Promise.all(clients.map(async c => {
    const figures: HonestFigures = { name: c.name, statuses: {}, latencies: [] }
    do {
      const started = performance.now()
      const outcome = await sendFrom(c.port, c.request(), c.from?.())
      figures.latencies.push(performance.now() - started)
      const key = outcome.kind === 'answer' ? String(outcome.status) : outcome.kind
      figures.statuses[key] = (figures.statuses[key] ?? 0) + 1
      await new Promise(resolve => setTimeout(resolve, pauseMs))
    } while (!over)
    figures.latencies.sort((a, b) => a - b)
    return figures
  }))
}

/** "name: 41 × 200; p50 3 ms, p99 40 ms, max 52 ms" */
export function describeFigures (f: HonestFigures): string {
  const at = (q: number): number => Math.round(f.latencies[Math.min(f.latencies.length - 1, Math.floor(q * f.latencies.length))] ?? 0)
  const statuses = Object.entries(f.statuses).map(([s, n]) => `${n} × ${s}`).join(', ')
  return `${f.name}: ${statuses}; p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${Math.round(f.latencies.at(-1) ?? 0)} ms`
}

/** Only the successes in `ok`: anything else, named. */
export function failures (f: HonestFigures, ok: readonly number[]): Record<string, number> {
  return Object.fromEntries(Object.entries(f.statuses).filter(([s]) => !ok.includes(Number(s))))
}

export interface Trickler {
  /** Connections opened, answers received (by status), and connections closed without one. */
  opened: number
  answers: Record<string, number>
  silentCloses: number
  stop(): void
}

/**
 * `count` connections that each send `head` (headers and the first bytes of
 * a body), then one byte every `everyMs`; when the gateway answers or closes
 * one, it is opened again, until stop().
 */
export function trickle (port: number, count: number, head: (i: number) => string, everyMs: number): Trickler {
  const state: Trickler = { opened: 0, answers: {}, silentCloses: 0, stop () { stopped = true; for (const s of sockets) s.destroy() } }
  const sockets = new Set<Socket>()
  let stopped = false
  const open = (i: number): void => {
    if (stopped) return
    state.opened++
    const socket = connect(port, '127.0.0.1')
    sockets.add(socket)
    let received = Buffer.alloc(0)
    let answered = false
    socket.on('error', () => undefined)
    // Answered, it goes again at once on a new connection, as an attacker would.
    socket.on('data', d => {
      received = Buffer.concat([received, d])
      const answer = parseAnswer(received)
      if (answer === undefined || answered) return
      answered = true
      state.answers[answer.status] = (state.answers[answer.status] ?? 0) + 1
      socket.destroy()
    })
    const timer = setInterval(() => { if (!socket.destroyed) socket.write('a') }, everyMs)
    socket.once('close', () => {
      clearInterval(timer)
      sockets.delete(socket)
      if (stopped) return
      if (!answered) {
        const answer = parseAnswer(received, true)
        if (answer === undefined) state.silentCloses++
        else state.answers[answer.status] = (state.answers[answer.status] ?? 0) + 1
      }
      setTimeout(() => open(i), 50)
    })
    socket.write(head(i))
  }
  for (let i = 0; i < count; i++) open(i)
  return state
}
