import type { Config } from '../../config/index.js'
import { GatewayError, refusal } from '../../errors.js'
import type { Reply, RequestContext } from '../../http/index.js'
import { TERMINAL_EVENT_TYPES } from '../catalogue.js'
import type { HarnessGate } from '../gate.js'
import type { RunHub } from '../hub.js'
import { isRunId, uuidv7 } from '../ids.js'
import { decodeCursor, encodeCursor, type ListQuery, type RunIndex } from '../list.js'
import type { RunManager } from '../manager.js'
import { parseEventsAfter, type RunRequest } from '../request.js'
import type { RunStore } from '../store.js'
import { isTerminal, type RunRecord } from '../types.js'
import type { ReadRate } from '../read-rate.js'
import type { StreamBudget } from '../stream-budget.js'
import type { RunsCluster } from './cluster.js'
import { mergePages, type OwnerPage } from './merge.js'
import type { PartitionOwner } from './partition.js'
import { forward, ownerUnavailable, PEER, passedHeaders, peerJson } from './peer.js'

/** How long a read of a run the owner does not know waits for the commands accepted before it to arrive. */
const MISS_WAIT_MS = 2000
/** How long a cancel waits for the run's end before answering 503 (the cancel stands). */
const CANCEL_WAIT_MS = 5000

export interface RequestParts {
  cluster: RunsCluster
  manager: RunManager
  store: RunStore
  hub: RunHub
  gate: HarnessGate
  config: Config
  /** Streams a run this process serves. */
  serve: (ctx: RequestContext, record: RunRecord) => undefined
  /** Streams forwarded to an owner hold a place here too (a socket each way). */
  streams: StreamBudget
  /** What each tenant is served of records and list pages, a second. */
  reads: ReadRate
}

/**
 * The harness routes in a cluster, from whichever process takes them: a
 * start or a cancel becomes a command for the run's partition; a read goes
 * to the partition's owner (here, or forwarded to the member that owns it,
 * which checks the caller again). A request forwarded by another member
 * (`peer`) is never forwarded again: it is answered here or 503.
 */
export class ClusterRequests {
  constructor (private readonly parts: RequestParts) {}

  /** Accepted once the start command is in Kafka (acks = all): it runs even if this process dies now. */
  async start (tenant: string, request: RunRequest, address?: string): Promise<Pick<RunRecord, 'run_id' | 'status'>> {
    const now = Date.now()
    const runId = `run-${uuidv7(now)}`
    await this.parts.cluster.submit({ type: 'start', run_id: runId, tenant_id: tenant, mode: request.mode, message: request.message, options: request.options, conversation_id: request.conversationId, created_at: now, ...(address === undefined ? {} : { address }) })
    return { run_id: runId, status: 'queued' }
  }

  /** `POST /runs`: the start, then the owner's answer once the run ended (200) or the wait is over (202). */
  async runSync (ctx: RequestContext, tenant: string, request: RunRequest, address?: string): Promise<Reply | undefined> {
    const accepted = await this.start(tenant, request, address)
    const wait = this.parts.config.harnessSyncTimeoutMs
    const route = await this.parts.cluster.route(accepted.run_id)
    if (route.kind === 'here') return this.withEvents(await this.awaitEnd(route.owner, accepted.run_id, tenant, wait))
    if (route.kind === 'there') return forward(ctx, route.url, this.parts.cluster.peerAgent, { path: `/runs/${accepted.run_id}`, method: 'GET', headers: passedHeaders(ctx, { [PEER.wait]: String(wait) }) })
    return { status: 202, body: accepted }
  }

  /** `GET /runs/{id}`. On the peer listener, `x-gateway-wait-ms` waits for the run's end first. */
  async read (ctx: RequestContext, peer: boolean): Promise<Reply | undefined> {
    return this.atOwner(ctx, peer, async (owner, id, tenant) => {
      const wait = peer ? Number(ctx.headers[PEER.wait] ?? 0) : 0
      if (Number.isSafeInteger(wait) && wait > 0) return this.withEvents(await this.awaitEnd(owner, id, tenant, Math.min(wait, this.parts.config.harnessSyncTimeoutMs)))
      const after = parseEventsAfter(ctx.query)
      this.parts.reads.check(tenant)
      return this.withEvents(await this.found(owner, id, tenant), 200, after)
    })
  }

  async stream (ctx: RequestContext, peer: boolean): Promise<undefined> {
    return this.atOwner(ctx, peer, async (owner, id, tenant) => this.parts.serve(ctx, await this.found(owner, id, tenant)), true)
  }

  /**
   * `POST /runs/{id}/cancel`. The owner checks the run, sends the cancel as
   * a command (so it holds if the partition moves meanwhile) and answers
   * once the run ended. Where no owner can be reached, the cancel is sent
   * all the same and answered 503: a retry answers once it took effect.
   */
  async cancel (ctx: RequestContext, peer: boolean): Promise<Reply | undefined> {
    const { cluster } = this.parts
    const tenant = await this.parts.gate.tenant(ctx.headers)
    const id = this.runId(ctx)
    const route = await cluster.route(id)
    if (route.kind === 'there' && !peer) return forward(ctx, route.url, cluster.peerAgent, { path: ctx.path, method: 'POST', headers: passedHeaders(ctx) })
    if (route.kind !== 'here') {
      await cluster.submit({ type: 'cancel', run_id: id, tenant_id: tenant })
      throw refusal('run_cancel_pending', { headers: { 'retry-after': '1' } })
    }
    const record = await this.found(route.owner, id, tenant)
    if (isTerminal(record.status)) throw refusal('run_not_in_flight', { value: record.status })
    await cluster.submit({ type: 'cancel', run_id: id, tenant_id: tenant })
    const ended = await this.awaitEnd(route.owner, id, tenant, CANCEL_WAIT_MS)
    if (!isTerminal(ended.status)) throw refusal('run_cancel_pending', { headers: { 'retry-after': '1' } })
    if (ended.status !== 'cancelled') throw refusal('run_not_in_flight', { value: ended.status })
    return this.withEvents(ended, 200)
  }

  /**
   * `GET /runs`: each owner's page of the partitions it serves, merged. With
   * `x-gateway-scope` on the peer listener, this process's page alone. 503
   * while any partition has no owner serving it: a page with a hole would
   * pass over runs for good.
   */
  async list (ctx: RequestContext, tenant: string, query: ListQuery, peer: boolean, index: RunIndex): Promise<Reply> {
    const { cluster, manager } = this.parts
    if (peer && ctx.headers[PEER.scope] === 'local') {
      return this.parts.reads.served(tenant, 200, JSON.stringify(index.page(tenant, query, id => cluster.serves(cluster.partitionOf(id)) ? manager.get(id) : undefined)))
    }
    const layout = await cluster.layout()
    if (!layout) throw ownerUnavailable('a partition of the runs topic has no owner now')
    const urls = new Set(layout.owners.values())
    const pages = await Promise.all([...urls].map(async (url): Promise<OwnerPage> => {
      const { status, body } = await peerJson(url, cluster.peerAgent, `/runs${ctx.query === '' ? '' : `?${ctx.query}`}`, passedHeaders(ctx, { [PEER.scope]: 'local' }))
      if (status !== 200) throw status === 503 ? ownerUnavailable(`the member at ${url} cannot list its runs now`) : new GatewayError('bad_gateway', `the member at ${url} answered ${status} to a list`)
      const page = body as { runs: RunRecord[], next_cursor: string | null }
      return { runs: page.runs, next: page.next_cursor === null ? null : decodeCursor(page.next_cursor) }
    }))
    const merged = mergePages(pages, query.limit)
    return this.parts.reads.served(tenant, 200, JSON.stringify({ runs: merged.runs, next_cursor: merged.next === null ? null : encodeCursor(merged.next) }))
  }

  /** Serves a request for one run where its partition's owner is. */
  private async atOwner<T> (ctx: RequestContext, peer: boolean, here: (owner: PartitionOwner, id: string, tenant: string) => Promise<T>, stream = false): Promise<T | undefined> {
    const tenant = await this.parts.gate.tenant(ctx.headers)
    const id = this.runId(ctx)
    const route = await this.parts.cluster.route(id)
    if (route.kind === 'here') return here(route.owner, id, tenant)
    if (route.kind === 'there' && !peer) {
      const place = stream ? this.parts.streams.take(tenant) : () => {}
      return forward(ctx, route.url, this.parts.cluster.peerAgent, { path: `${ctx.path}${ctx.query === '' ? '' : `?${ctx.query}`}`, headers: passedHeaders(ctx) }).finally(place)
    }
    throw ownerUnavailable(route.kind === 'there' ? 'the run\'s partition moved while the request was forwarded' : route.why)
  }

  /** The id of the path, when it could be a run's: anything else is unknown (404) without asking anyone. */
  private runId (ctx: RequestContext): string {
    const id = ctx.params['id']!
    if (!isRunId(id)) throw refusal('run_not_found')
    return id
  }

  /**
   * The run as committed, checked against the tenant. A run this owner does
   * not know may have been accepted through another process a moment ago:
   * the commands accepted before this read are waited for, then it is looked
   * for again.
   */
  private async found (owner: PartitionOwner, id: string, tenant: string): Promise<RunRecord> {
    let record = await this.committed(id)
    if (!record && await owner.caughtUp(MISS_WAIT_MS)) record = await this.committed(id)
    if (!record) throw refusal('run_not_found')
    if (record.tenant_id !== tenant) throw refusal('cross_tenant_replay:run')
    return record
  }

  /** The record as its committed events have it (a run starting now is waited for until its first event is committed). */
  private async committed (id: string): Promise<RunRecord | undefined> {
    await this.parts.manager.committed(id)
    return this.parts.store.get(id)
  }

  /** Waits for the run (if its start is still on its way) and for its end, at most `ms`; the record as it is then. */
  private async awaitEnd (owner: PartitionOwner, id: string, tenant: string, ms: number): Promise<RunRecord> {
    const deadline = performance.now() + ms
    let ended!: () => void
    const end = new Promise<void>(resolve => { ended = resolve })
    // Subscribed first: an end committed while the record is read is not missed.
    const unsubscribe = this.parts.hub.subscribe(id, e => { if (TERMINAL_EVENT_TYPES.has(e.type)) ended() }, ended)
    let timer: NodeJS.Timeout | undefined
    try {
      const record = await this.found(owner, id, tenant)
      if (isTerminal(record.status)) return record
      await Promise.race([end, new Promise<void>(resolve => { timer = setTimeout(resolve, Math.max(0, deadline - performance.now())) })])
      return (await this.committed(id)) ?? record
    } finally {
      clearTimeout(timer)
      unsubscribe()
    }
  }

  private withEvents (record: RunRecord, status = isTerminal(record.status) ? 200 : 202, afterId = 0): Reply {
    return this.parts.reads.served(record.tenant_id, status, this.parts.store.document(record, afterId))
  }
}
