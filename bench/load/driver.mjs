// The load tool's engine, open loop: request i is due at t0 + i / rate,
// whatever happened to the ones before it; it is sent when due (a connection
// of the pool permitting, else it queues in the pool) and its latency counts
// from when it was due to the end of its answer. So a server that falls
// behind shows it in the latency, instead of slowing the sender down
// (coordinated omission).
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Sends `total` = rate × duration requests on the timeline (or one at each
 * time of `schedule`, ms from the start: ramping stages, plan.mjs), then
 * waits for the answers (at most the request timeout and 5 s more).
 * `stop.stopped` ends the sending early (Ctrl-C). Resolves to
 * { scheduled, t0, unfinished }.
 */
export async function drive ({ pool, streams, uploads, rate, duration, schedule, nextKind, builders, session, rec, timeoutMs, maxInFlight, stop }) {
  const interval = 1000 / rate
  const total = schedule?.length ?? Math.round(rate * duration)
  const offset = schedule === undefined ? i => i * interval : i => schedule[i]
  const t0 = performance.now() + 10
  const pending = new Set()

  async function send (i, kind, due) {
    // The scheduler's own lateness; a wait for a new token below counts in the latency.
    rec.sent(kind, due - t0, performance.now() - due)
    const { token, generation } = await session.current()
    const req = builders[kind](i, token)
    if (req.stream !== undefined) return sendOnStream(kind, due, req.stream)
    if (req.tus !== undefined) return sendResumable(kind, due, token, generation, req.tus)
    try {
      const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
      let ok = res.statusCode === req.expect
      let body
      if (ok && req.expectBody !== undefined) {
        body = await res.body.text()
        ok = body.includes(req.expectBody)
      } else body = ok ? await res.body.dump() : await res.body.text()
      const end = performance.now()
      if (res.statusCode === 401) session.refresh(generation)
      rec.answered(kind, end - t0, end - due, String(res.statusCode), ok, body)
    } catch (err) {
      rec.failed(kind, performance.now() - t0, err.code ?? err.name ?? 'error')
    }
  }

  async function sendOnStream (kind, due, record) {
    try {
      const answer = await streams.send(record)
      const end = performance.now()
      rec.answered(kind, end - t0, end - due, answer === 'accepted' ? 'acked' : answer, answer === 'accepted', answer)
    } catch (err) {
      rec.failed(kind, performance.now() - t0, err.code ?? err.name ?? 'error')
    }
  }

  async function sendResumable (kind, due, token, generation, eventId) {
    try {
      const answer = await uploads.send(token, eventId)
      const end = performance.now()
      if (/ 401$/.test(answer.status)) session.refresh(generation)
      rec.answered(kind, end - t0, end - due, answer.status, answer.ok, answer.body)
    } catch (err) {
      rec.failed(kind, performance.now() - t0, err.code ?? err.name ?? 'error')
    }
  }

  let i = 0
  while (i < total && !stop.stopped) {
    const now = performance.now()
    for (; i < total && t0 + offset(i) <= now; i++) {
      const due = t0 + offset(i)
      const kind = nextKind()
      if (rec.inFlight >= maxInFlight) { rec.notSent(kind, due - t0); continue }
      const p = send(i, kind, due)
      pending.add(p)
      p.finally(() => pending.delete(p))
    }
    // Timers fire late by a millisecond or so: every request due by then goes out on the next turn.
    if (i < total) await sleep(Math.max(1, Math.min(50, t0 + offset(i) - performance.now())))
  }
  const drained = Promise.allSettled([...pending]).then(() => true)
  // The deadline is cancelled once everything is answered: a pending timer would hold the process that long.
  const deadline = new AbortController()
  const late = sleep(timeoutMs + 5000, false, { signal: deadline.signal }).catch(() => false)
  const inTime = await Promise.race([drained, late])
  deadline.abort()
  return { scheduled: i, total, t0, unfinished: inTime ? 0 : pending.size }
}
