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
  /** The tenant's prefix when it was kept: a tenant forgotten and recorded again numbers from 1 under a new one. */
  prefix: string
  /** `id` is the tenant's own number in this feed; `frame` carries `<prefix>.<id>`. */
  event: RunEvent
}

interface Watcher {
  sse: SseStream
  /** While a resumed watcher is replayed, live events join the end of its replay. */
  backlog: RunEvent[] | undefined
}

/** What the feed keeps of a tenant it records: where its ids start and how far they went. */
interface Recorded {
  /** The id prefix, `<epoch><era>`: new each time the tenant is recorded, so an id of an earlier keeping is never taken for one of this. */
  prefix: string
  /** Its newest transition's number (they count from 1, this tenant's alone). */
  seq: number
  /** The number of its newest transition dropped from the feed: a resume from before it cannot be exact. */
  dropped: number
}

/**
 * `GET /runs:watch`: the run transitions (the lifecycle events, whose
 * `data.run` is the record as of it) of the watcher's tenant, numbered in a
 * sequence of that tenant's own (one tenant learns nothing of another's
 * activity from the gaps). Ids are `<prefix>.<n>`, the prefix new at each
 * start of the process and each time it begins keeping the tenant's: a
 * watcher that resumes with an id still kept in memory gets exactly what it
 * missed; any other id (the process restarted, or it fell too far behind)
 * gets `event: reset` and should list again, as a watch API that cannot
 * replay from so far says so rather than skipping in silence.
 *
 * Transitions are kept only for tenants that have had a watcher in this
 * process, from its first one on: an id to resume from is one a watcher was
 * sent here, so nothing before that is ever asked for. A gateway nobody
 * watches keeps nothing: kept, each transition outlives a few
 * young-generation collections and is copied into the old one.
 */
export class RunFeed {
  readonly epoch = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`
  private era = 0
  private kept: Entry[] = []
  private start = 0
  private bytes = 0
  private readonly watchers = new Map<string, Set<Watcher>>()
  /** Tenants whose transitions are kept, oldest recorded first. */
  private readonly recorded = new Map<string, Recorded>()

  constructor (private readonly keepTenants = FEED_KEEP_TENANTS) {}

  /** Watchers of every tenant together (the SSE streams of /runs/watch). */
  get watcherCount (): number {
    let n = 0
    for (const set of this.watchers.values()) n += set.size
    return n
  }

  /** A committed event; only lifecycle events (those carrying a record) are transitions. */
  publish (event: RunEvent): void {
    // Most gateways are never watched: no tenant to keep for, no need to read this event's.
    if (event.record === undefined || this.recorded.size === 0) return
    const tenant = eventTenant(event.json)
    const mine = tenant === undefined ? undefined : this.recorded.get(tenant)
    if (mine === undefined) return
    const entry: Entry = { tenant: tenant!, prefix: mine.prefix, event: { id: ++mine.seq, type: event.type, json: event.json } }
    this.kept.push(entry)
    this.bytes += event.json.length
    while (this.kept.length - this.start > FEED_KEEP_EVENTS || (this.bytes > FEED_KEEP_BYTES && this.kept.length - this.start > 1)) {
      const gone = this.kept[this.start]!
      this.bytes -= gone.event.json.length
      const owner = this.recorded.get(gone.tenant)
      if (owner?.prefix === gone.prefix && gone.event.id > owner.dropped) owner.dropped = gone.event.id
      this.kept[this.start++] = undefined as unknown as Entry
    }
    if (this.start > 1024 && this.start * 2 > this.kept.length) {
      this.kept = this.kept.slice(this.start)
      this.start = 0
    }
    const set = this.watchers.get(entry.tenant)
    if (set === undefined) return
    this.frame(entry.event, mine.prefix)
    for (const w of set) {
      if (w.backlog) w.backlog.push(entry.event)
      else w.sse.event(entry.event)
    }
  }

  /** Serves one watcher of `tenant` until it leaves, overflows or the feed closes. */
  async watch (ctx: RequestContext, tenant: string, lastEventId: string | undefined, maxBuffered: number, heartbeatMs: number, closed: () => void = () => {}): Promise<void> {
    const resume = this.resumeAt(lastEventId, tenant)
    if (!ctx.live) return
    const mine = this.recorded.get(tenant) ?? this.record(tenant)
    const overflow = (last: number): string => `event: error\ndata: ${JSON.stringify({ error: 'stream_overflow', last_event_id: `${mine.prefix}.${last}` })}\n\n`
    const now = mine.seq
    const sse = new SseStream(ctx, '', maxBuffered, heartbeatMs, resume === undefined ? now - 1 : resume, overflow)
    const replay = resume === undefined ? [] : this.after(resume, tenant, mine.prefix)
    const watcher: Watcher = { sse, backlog: replay }
    let set = this.watchers.get(tenant)
    if (set === undefined) this.watchers.set(tenant, set = new Set())
    set.add(watcher)
    sse.onClose(() => {
      closed()
      set.delete(watcher)
      if (set.size === 0 && this.watchers.get(tenant) === set) this.watchers.delete(tenant)
    })
    if (resume === undefined) {
      const kind = lastEventId === undefined || lastEventId.trim() === '' ? 'ready' : 'reset'
      const data = JSON.stringify(kind === 'ready' ? { epoch: mine.prefix } : { epoch: mine.prefix, reason: 'the position is not kept (another process, or too far behind): list again' })
      sse.event({ id: now, type: kind, json: data, frame: `id: ${mine.prefix}.${now}\nevent: ${kind}\ndata: ${data}\n\n` })
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
   * The tenant's number to resume after, or undefined for a fresh start (no
   * id) or a reset (an id this process cannot replay from). A value that is
   * no id of any feed is refused, like a bad Last-Event-ID on a run's stream.
   */
  private resumeAt (lastEventId: string | undefined, tenant: string): number | undefined {
    const value = lastEventId?.trim() ?? ''
    if (value === '') return undefined
    const m = LAST_ID.exec(value)
    if (!m) throw new GatewayError('validation_error', 'Last-Event-ID must be an id of this feed (<epoch>.<n>)')
    const n = Number(m[2])
    const mine = this.recorded.get(tenant)
    // Every transition of the tenant after n must still be kept: none dropped off the front.
    return mine !== undefined && m[1] === mine.prefix && n <= mine.seq && n >= mine.dropped ? n : undefined
  }

  /** Keeps the tenant's transitions from the next one on, forgetting the longest-recorded unwatched tenant past `keepTenants`. */
  private record (tenant: string): Recorded {
    if (this.recorded.size >= this.keepTenants) {
      for (const old of this.recorded.keys()) {
        if (this.watchers.has(old)) continue
        this.recorded.delete(old)
        break
      }
    }
    const mine: Recorded = { prefix: `${this.epoch}${(++this.era).toString(36)}`, seq: 0, dropped: 0 }
    this.recorded.set(tenant, mine)
    return mine
  }

  /** Kept events of `tenant` after its number `n`, framed. */
  private after (n: number, tenant: string, prefix: string): RunEvent[] {
    const out: RunEvent[] = []
    for (let i = this.start; i < this.kept.length; i++) {
      const entry = this.kept[i]!
      if (entry.tenant === tenant && entry.prefix === prefix && entry.event.id > n) out.push(this.frame(entry.event, prefix))
    }
    return out
  }

  private frame (e: RunEvent, prefix: string): RunEvent {
    e.frame ??= `id: ${prefix}.${e.id}\nevent: ${e.type}\ndata: ${e.json}\n\n`
    return e
  }
}
