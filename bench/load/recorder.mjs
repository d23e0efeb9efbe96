// What the load tool measures: per kind, what was sent, how it was answered
// and how long it took from its place on the timeline; per second of the run,
// the same in short (for the chart); and since the last progress line.
import { Histogram } from '../lib/stats.mjs'
import { latencyHistogram, recordMs } from './hdr.mjs'

const bump = (o, k, n = 1) => { o[k] = (o[k] ?? 0) + n }

export class Recorder {
  constructor (kinds) {
    this.kinds = Object.fromEntries(kinds.map(k => [k, { sent: 0, answered: 0, ok: 0, notSent: 0, statuses: {}, unexpected: {}, errors: {}, examples: {}, latency: new Histogram() }]))
    this.latency = new Histogram() // every answer, all kinds
    this.sendLag = new Histogram() // how late the tool itself sent, against the timeline
    this.perSecond = [] // [{ sent, ok, bad, latency }] by second of the run
    this.window = this.newWindow()
    this.inFlight = 0
  }

  newWindow () { return { sent: 0, latency: new Histogram(), since: performance.now() } }

  second (tRel) {
    const i = Math.max(0, Math.floor(tRel / 1000))
    while (this.perSecond.length <= i) this.perSecond.push({ sent: 0, ok: 0, bad: 0, latency: new Histogram(), hdr: latencyHistogram() })
    return this.perSecond[i]
  }

  sent (kind, tRel, lagMs) {
    this.kinds[kind].sent++
    this.second(tRel).sent++
    this.window.sent++
    this.sendLag.push(lagMs)
    this.inFlight++
  }

  /** A due request not sent: --max-in-flight requests were already waiting. */
  notSent (kind, tRel) {
    this.kinds[kind].notSent++
    this.second(tRel).bad++
  }

  /** An answer with `status` (ok: the status the spec gives for success), `latencyMs` after its time on the timeline. */
  answered (kind, tRel, latencyMs, status, ok, body) {
    const k = this.kinds[kind]
    this.inFlight--
    k.answered++
    bump(k.statuses, status)
    if (ok) k.ok++
    else {
      bump(k.unexpected, status)
      if ((k.examples[status] ??= []).length < 3) k.examples[status].push(String(body ?? '').slice(0, 300))
    }
    k.latency.push(latencyMs)
    this.latency.push(latencyMs)
    this.window.latency.push(latencyMs)
    const s = this.second(tRel)
    if (ok) s.ok++
    else s.bad++
    s.latency.push(latencyMs)
    recordMs(s.hdr, latencyMs)
  }

  /** No answer: a connection error or a timeout (`code`). */
  failed (kind, tRel, code) {
    this.inFlight--
    bump(this.kinds[kind].errors, code)
    this.second(tRel).bad++
  }

  /** Whatever was not a success, all kinds together: { '401': 2, ECONNRESET: 1, 'not sent': 3 }. */
  problems () {
    const out = {}
    for (const k of Object.values(this.kinds)) {
      for (const [s, n] of [...Object.entries(k.unexpected), ...Object.entries(k.errors)]) bump(out, s, n)
      if (k.notSent) bump(out, 'not sent', k.notSent)
    }
    return out
  }
}
