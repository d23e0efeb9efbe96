import { randomBytes } from 'node:crypto'
import { GatewayError } from '../errors.js'
import type { RequestContext } from '../http/index.js'
import { eventTenant } from './events.js'
import { SseStream } from './sse.js'
import type { RunEvent } from './types.js'

/** The feed keeps the newest transitions, at most this many and this many bytes, for watchers that resume. */
export const FEED_KEEP_EVENTS = 10_000
export const FEED_KEEP_BYTES = 8 * 1024 * 1024
/**
 * Tenants whose transitions are kept, at most: past it the one recorded
 * longest ago with no watcher now is forgotten (its watchers resuming get
 * `reset`). Without the harness's gate the tenant is a header, so each new
 * name must not cost memory for good.
 */
export const FEED_KEEP_TENANTS = 10_000

/** A Last-Event-ID of this feed: `<epoch>.<n>`. */
const LAST_ID = /^([0-9a-z]{1,32})\.(\d{1,15})$/

interface Entry {
  tenant: string
  /** `id` is the feed's own number; `frame` carries `<epoch>.<id>`. */
  event: RunEvent
}

interface Watcher {
  sse: SseStream
  /** While a resumed watcher is replayed, live events join the end of its replay. */
  backlog: RunEvent[] | undefined
}

/**
 * `GET /runs:watch`: every run transition (the lifecycle events, whose
 * `data.run` is the record as of it) of every tenant, numbered in one
 * sequence per process. A watcher gets its own tenant's. Ids are
 * `<epoch>.<n>`, the epoch new at each start: a watcher that resumes with an
 * id of this process still kept in memory gets exactly what it missed;
 * any other id (the process restarted, or it fell too far behind) gets
 * `event: reset` and should list again, as a watch API that cannot replay
 * from so far says so rather than skipping in silence.
 *
 * Transitions are kept only for tenants that have had a watcher in this
 * process, from its first one on: an id to resume from is one a watcher was
 * sent here, so nothing before that is ever asked for. A gateway nobody
 * watches keeps nothing; kept, each transition outlived a few young-generation
 * collections and was copied into the old one, about a third of what a run
 * made V8 promote (bench/README.md, "2026-11-24").
 */
export class RunFeed {
  readonly epoch = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`
  private seq = 0
  private kept: Entry[] = []
  private start = 0
  private bytes = 0
  /** The newest feed number dropped from `kept`: a resume from before it cannot be exact. */
  private dropped = 0
  private readonly watchers = new Map<string, Set<Watcher>>()
  /** Tenants whose transitions are kept, and the feed number their keeping began at. */
  private readonly recorded = new Map<string, number>()

  constructor (private readonly keepTenants = FEED_KEEP_TENANTS) {}

  /** A committed event; only lifecycle events (those carrying a record) are transitions. */
  publish (event: RunEvent): void {
    if (event.record === undefined) return
    const id = ++this.seq
    // Most gateways are never watched: no tenant to keep for, no need to read this event's.
    if (this.recorded.size === 0) return
    const tenant = eventTenant(event.json)
    if (tenant === undefined || !this.recorded.has(tenant)) return
    const entry: Entry = { tenant, event: { id, type: event.type, json: event.json } }
    this.kept.push(entry)
    this.bytes += event.json.length
    while (this.kept.length - this.start > FEED_KEEP_EVENTS || (this.bytes > FEED_KEEP_BYTES && this.kept.length - this.start > 1)) {
      const gone = this.kept[this.start]!
      this.bytes -= gone.event.json.length
      this.dropped = gone.event.id
      this.kept[this.start++] = undefined as unknown as Entry
    }
    if (this.start > 1024 && this.start * 2 > this.kept.length) {
      this.kept = this.kept.slice(this.start)
      this.start = 0
    }
    const set = this.watchers.get(tenant)
    if (set === undefined) return
    this.frame(entry.event)
    for (const w of set) {
      if (w.backlog) w.backlog.push(entry.event)
      else w.sse.event(entry.event)
    }
  }

  /** Serves one watcher of `tenant` until it leaves, overflows or the feed closes. */
  async watch (ctx: RequestContext, tenant: string, lastEventId: string | undefined, maxBuffered: number, heartbeatMs: number): Promise<void> {
    const resume = this.resumeAt(lastEventId, tenant)
    if (!ctx.live) return
    if (!this.recorded.has(tenant)) this.record(tenant)
    const overflow = (last: number): string => `event: error\ndata: ${JSON.stringify({ error: 'stream_overflow', last_event_id: `${this.epoch}.${last}` })}\n\n`
    const now = this.seq
    const sse = new SseStream(ctx, '', maxBuffered, heartbeatMs, resume === undefined ? now - 1 : resume, overflow)
    const replay = resume === undefined ? [] : this.after(resume, tenant)
    const watcher: Watcher = { sse, backlog: replay }
    let set = this.watchers.get(tenant)
    if (set === undefined) this.watchers.set(tenant, set = new Set())
    set.add(watcher)
    sse.onClose(() => {
      set.delete(watcher)
      if (set.size === 0 && this.watchers.get(tenant) === set) this.watchers.delete(tenant)
    })
    if (resume === undefined) {
      const kind = lastEventId === undefined || lastEventId.trim() === '' ? 'ready' : 'reset'
      const data = JSON.stringify(kind === 'ready' ? { epoch: this.epoch } : { epoch: this.epoch, reason: 'the position is not kept (another process, or too far behind): list again' })
      sse.event({ id: now, type: kind, json: data, frame: `id: ${this.epoch}.${now}\nevent: ${kind}\ndata: ${data}\n\n` })
    }
    let written = sse.replay(replay, 0)
    while (written < replay.length && !sse.closed) {
      await sse.drained()
      written = sse.replay(replay, written)
    }
    watcher.backlog = undefined
  }

  /** Ends every watcher (shutdown: a watch never ends by itself, and would hold the server's drain). */
  close (): void {
    for (const set of this.watchers.values()) for (const w of set) w.sse.end()
  }

  /**
   * The feed number to resume after, or undefined for a fresh start (no id)
   * or a reset (an id this process cannot replay from). A value that is no
   * id of any feed is refused, like a bad Last-Event-ID on a run's stream.
   */
  private resumeAt (lastEventId: string | undefined, tenant: string): number | undefined {
    const value = lastEventId?.trim() ?? ''
    if (value === '') return undefined
    const m = LAST_ID.exec(value)
    if (!m) throw new GatewayError('validation_error', 'Last-Event-ID must be an id of this feed (<epoch>.<n>)')
    const n = Number(m[2])
    // Every transition of the tenant after n must still be kept: none dropped
    // off the front, none from before its keeping began.
    const since = this.recorded.get(tenant) ?? this.seq + 1
    return m[1] === this.epoch && n <= this.seq && n >= this.dropped && n >= since - 1 ? n : undefined
  }

  /** Keeps the tenant's transitions from the next one on, forgetting the longest-recorded unwatched tenant past `keepTenants`. */
  private record (tenant: string): void {
    if (this.recorded.size >= this.keepTenants) {
      for (const old of this.recorded.keys()) {
        if (this.watchers.has(old)) continue
        this.recorded.delete(old)
        break
      }
    }
    this.recorded.set(tenant, this.seq + 1)
  }

  /** Kept events of `tenant` after feed number `n`, framed (kept ids rise, with gaps where no tenant was recorded). */
  private after (n: number, tenant: string): RunEvent[] {
    const out: RunEvent[] = []
    for (let i = this.start; i < this.kept.length; i++) {
      const entry = this.kept[i]!
      if (entry.event.id > n && entry.tenant === tenant) out.push(this.frame(entry.event))
    }
    return out
  }

  private frame (e: RunEvent): RunEvent {
    e.frame ??= `id: ${this.epoch}.${e.id}\nevent: ${e.type}\ndata: ${e.json}\n\n`
    return e
  }
}
