import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import { ActorPool, type RunActor } from './actors.js'
import { STEP_EVENT_TYPES } from './catalogue.js'
import type { RunMachineEvent } from './machine.js'
import { ModeError, type Mode } from './modes/index.js'
import { encodeEvent, eventOwner, recordHead } from './events.js'
import { INTERRUPTED, interruptedEnd, lifecycleEvent } from './lifecycle.js'
import type { RunHub } from './hub.js'
import { uuidv7 } from './ids.js'
import { isoNow } from '../ops/index.js'
import type { RunStore } from './store.js'
import type { TenantStorage } from './tenant-storage.js'
import { InFlightCounts, NO_LIMITS, type RunLimits } from './in-flight.js'
import { isTerminal, type RunEvent, type RunRecord } from './types.js'
import type { GatewayError } from '../errors.js'


/**
 * Where a run's events are committed: LMDB alone on a single node (the
 * store), the runs topic then LMDB in a cluster (the partition's writer). An
 * event is streamed only once this resolves true.
 */
export interface EventLog {
  append(runId: string, event: RunEvent): Promise<boolean>
}

/** Where committed events go after the live subscribers: the bus relay (`RunOutbox`). */
export interface EventSink {
  track(runId: string, tenantId: string, createdAt: number): void
  add(runId: string, event: RunEvent, terminal: boolean): void
}

interface ActiveRun {
  record: RunRecord
  /** `"run_id":…,"tenant_id":…` of every event of the run. */
  owner: string
  /** The record's members that never change, serialised (`recordHead`). */
  head: string
  /** Its own while it is in flight; given back to the pool, and dropped, once its terminal event is committed. */
  actor: RunActor | undefined
  /** Stores, then streams, then hands to the sink each event in order. */
  chain: Promise<void>
  /** Events of `chain` not yet streamed. */
  pending: number
  /** Cancelled or interrupted: the mode is told to stop and its steps are no longer recorded. */
  stopped: boolean
  /** Given up by this process (it lost the run's partition): nothing more of it is committed or streamed here. */
  abandoned?: boolean
  /** Made when the mode first reads its signal: an echo run without a delay never does. */
  abort?: AbortController
  /** The client address it counts against (`RunLimits.perAddress`). */
  address?: string | undefined
  /** Ends the run at `RunLimits.lifetimeMs`. */
  deadline?: NodeJS.Timeout
  /** Bytes of its events written so far (`TenantStorage`). */
  bytes: number
  /** Made when someone first waits for the end (most runs are never waited for). */
  ended?: Promise<RunRecord>
  end?: (record: RunRecord) => void
}

export interface ManagerOptions {
  /** Where events are committed (default: the store). */
  log?: EventLog
  /**
   * A mode starts only once the run's start is committed, so a run whose
   * log says `queued` has done nothing yet and a new owner may start it
   * again. On a single node the mode starts as the event is queued.
   */
  commitBeforeExecute?: boolean
  /** The disk each tenant's runs may take: consulted at every start, told of every event. */
  storage?: TenantStorage
}

export interface StartRun {
  /** Given by whoever accepted the run, in a cluster; made here otherwise. */
  runId?: string
  /** When it was accepted (ms), with `runId`. */
  createdAt?: number
  tenant: string
  /** The client's address, where it bounds the runs one client holds (the open mode). */
  address?: string
  mode: string
  message: string
  options: Record<string, unknown>
  conversationId: string | null
}

/**
 * Runs as xstate actors. Every transition and step is appended to LMDB first,
 * then handed to live subscribers, then to the bus relay, in order per run.
 */
export class RunManager {
  private readonly active = new Map<string, ActiveRun>()
  private readonly counts: InFlightCounts
  private readonly actors = new ActorPool()
  private readonly events: EventLog
  private readonly commitBeforeExecute: boolean
  private readonly storage: TenantStorage | undefined

  constructor (
    private readonly store: RunStore,
    private readonly hub: RunHub,
    private readonly modes: ReadonlyMap<string, Mode>,
    private readonly sink: EventSink,
    private readonly log: Logger,
    private readonly limits: RunLimits = NO_LIMITS,
    options: ManagerOptions = {}
  ) {
    this.events = options.log ?? store
    this.commitBeforeExecute = options.commitBeforeExecute ?? false
    this.storage = options.storage
    this.counts = new InFlightCounts(limits)
  }

  hasMode (mode: string): boolean {
    return this.modes.has(mode)
  }

  get (runId: string): RunRecord | undefined {
    return this.active.get(runId)?.record ?? this.store.get(runId)
  }

  /** Resolves once the events of the run made so far are committed (or could not be). */
  committed (runId: string): Promise<void> {
    const run = this.active.get(runId)
    return run === undefined ? Promise.resolve() : run.chain.then(() => undefined, () => undefined)
  }

  /** True until the run's last event has been stored and streamed: after that, nothing more comes. */
  isActive (runId: string): boolean {
    return this.active.has(runId)
  }

  get inFlight (): number {
    return this.active.size
  }

  /** Why a start would be refused now (the in-flight bounds, then the tenant's storage), or undefined. */
  refusal (tenant: string, address?: string): GatewayError | undefined {
    return this.counts.refusal(this.active.size, tenant, address) ?? this.storage?.refusal(tenant)
  }

  /**
   * A run accepted elsewhere (a command of the cluster), which has no
   * caller left to refuse: past the bounds, or for a mode this process does
   * not have, it is recorded queued and then failed, with the reason as its
   * error code.
   */
  accept (input: StartRun): Promise<RunRecord> {
    const refused = this.hasMode(input.mode) ? this.refusal(input.tenant, input.address)?.message : 'unknown_mode'
    return this.create(input, refused)
  }

  /** Creates the run (stored as queued before this resolves) and starts it on the next turn. */
  async start (input: StartRun): Promise<RunRecord> {
    const refused = this.refusal(input.tenant, input.address)
    if (refused) throw refused
    return this.create(input, undefined)
  }

  private async create (input: StartRun, refused: string | undefined): Promise<RunRecord> {
    this.counts.add(input.tenant, input.address)
    const now = input.createdAt ?? Date.now()
    const createdAt = isoNow(now)
    const record: RunRecord = {
      run_id: input.runId ?? `run-${uuidv7(now)}`,
      tenant_id: input.tenant,
      mode: input.mode,
      message: input.message,
      status: 'queued',
      created_at: createdAt,
      started_at: null,
      ended_at: null,
      result: null,
      answer: null,
      artifacts: [],
      conversation_id: input.conversationId,
      error: null,
      last_event_id: 1
    }
    const actor = this.actors.take()
    const owner = eventOwner(record.run_id, record.tenant_id)
    const run: ActiveRun = { record, owner, head: recordHead(owner, record), actor, chain: Promise.resolve(), pending: 0, stopped: false, address: input.address, bytes: 0 }
    this.active.set(record.run_id, run)
    const lifetime = this.limits.lifetimeMs
    if (lifetime !== undefined && lifetime < Infinity) run.deadline = setTimeout(() => this.expire(run, lifetime), lifetime).unref()
    this.sink.track(record.run_id, record.tenant_id, now)
    this.commit(run, record, lifecycleEvent(run, record, createdAt))
    if (refused !== undefined) this.transition(run, { type: 'FAIL' }, { error: { code: refused, message: `the run was not started: ${refused}` }, ended_at: isoNow() })
    await run.chain
    if (refused === undefined) setImmediate(() => { this.execute(run, input).catch(err => this.log.error({ err, runId: record.run_id }, 'run execution failed')) })
    return run.record
  }

  /** Resolves with the terminal record, or the current one when `timeoutMs` passes first. */
  async waitForEnd (runId: string, timeoutMs: number): Promise<RunRecord | undefined> {
    const run = this.active.get(runId)
    if (!run) return this.get(runId)
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<RunRecord>(resolve => { timer = setTimeout(() => resolve(run.record), timeoutMs) })
    try {
      return await Promise.race([ended(run), timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Cancels an in-flight run; undefined when the run is unknown or already terminal. */
  async cancel (runId: string): Promise<RunRecord | undefined> {
    const run = this.active.get(runId)
    if (!run || !this.transition(run, { type: 'CANCEL' }, { ended_at: isoNow() })) return undefined
    stop(run)
    await run.chain
    return run.record
  }

  /**
   * Gives up the runs `which` selects without ending them: this process lost
   * their partition, and its next owner ends or resumes them from the log.
   * Their modes are told to stop, nothing more of them is committed or
   * streamed here, and whoever waits for their end gets the record as it is.
   */
  abandon (which: (runId: string) => boolean): string[] {
    const given: string[] = []
    for (const run of [...this.active.values()]) {
      if (!which(run.record.run_id)) continue
      run.abandoned = true
      stop(run)
      run.actor?.stop()
      run.actor = undefined
      this.release(run)
      given.push(run.record.run_id)
    }
    return given
  }

  /**
   * Runs of a process that died (`runIds`, claimed by the relay) that were
   * in flight cannot be resumed safely (a mode may have half-done side
   * effects), so each is failed with `interrupted`. Call before the relay
   * takes them: it publishes these ends with the rest. Returns how many.
   */
  async recover (runIds: Iterable<string>): Promise<number> {
    const ended: Array<Promise<boolean>> = []
    for (const runId of runIds) {
      const stale = this.store.get(runId)
      if (stale && !isTerminal(stale.status) && !this.active.has(runId)) ended.push(this.store.append(runId, interruptedEnd(stale)))
    }
    await Promise.all(ended)
    return ended.length
  }

  /**
   * Shutdown: runs still in flight end as they would after a crash (failed,
   * `interrupted`), their modes are told to stop, and every event is stored
   * before this resolves.
   */
  async drain (): Promise<void> {
    const runs = [...this.active.values()]
    for (const run of runs) {
      this.transition(run, { type: 'FAIL' }, { error: INTERRUPTED, ended_at: isoNow() })
      stop(run)
    }
    await Promise.all(runs.map(ended))
  }

  private async execute (run: ActiveRun, input: StartRun): Promise<void> {
    if (!this.transition(run, { type: 'START' }, { started_at: isoNow() })) return
    if (this.commitBeforeExecute) {
      await run.chain
      if (run.abandoned) return
    }
    const mode = this.modes.get(input.mode)!
    try {
      const result = await mode({
        message: input.message,
        options: input.options,
        get signal () { return signal(run) },
        emit: async (type, message, data) => {
          if (run.stopped) throw new DOMException('the run was stopped', 'AbortError')
          if (!STEP_EVENT_TYPES.has(type)) throw new Error(`mode ${input.mode} emitted an event of unknown type ${JSON.stringify(type)}`)
          if (this.storage !== undefined) await this.makeRoom(run)
          const record = { ...run.record, last_event_id: run.record.last_event_id + 1 }
          this.commit(run, record, encodeEvent(run.owner, record.last_event_id, type, message, JSON.stringify(data), isoNow()))
          await run.chain
        }
      })
      const output = (result as { output?: unknown } | null | undefined)?.output
      this.transition(run, { type: 'SUCCEED' }, { result, answer: typeof output === 'string' ? output : null, ended_at: isoNow() })
    } catch (err) {
      const error = err instanceof ModeError ? { code: err.code, message: err.message } : { code: 'mode_failed', message: (err as Error).message }
      this.transition(run, { type: 'FAIL' }, { error, ended_at: isoNow() })
    }
    await run.chain
  }

  /** Sends `event` to the actor; on a state change, records it. False when the state did not change, or the run has ended and given its actor back. */
  private transition (run: ActiveRun, event: RunMachineEvent, patch: Partial<RunRecord>): boolean {
    const actor = run.actor
    if (actor === undefined) return false
    const before = actor.getSnapshot().context
    actor.send(event)
    const status = actor.getSnapshot().context
    if (status === before) return false
    const record = { ...run.record, ...patch, status, last_event_id: run.record.last_event_id + 1 }
    this.commit(run, record, lifecycleEvent(run, record, record.ended_at ?? record.started_at ?? record.created_at))
    return true
  }

  /** Before a step: the run fails when its tenant's quota is held, and waits while its tenant's write rate is spent. */
  private async makeRoom (run: ActiveRun): Promise<void> {
    const tenant = run.record.tenant_id
    const full = this.storage!.full(tenant)
    if (full !== undefined) throw new ModeError('run_storage_limit', full)
    const wait = this.storage!.waitMs(tenant)
    if (wait > 0) await sleep(wait, undefined, { signal: signal(run) })
  }

  /**
   * Records the event that made `record` (its id is `record.last_event_id`):
   * queues its write at once, then streams it and hands it to the relay once
   * it is committed and the run's previous events have been, so a run never
   * waits for one commit per event.
   */
  private commit (run: ActiveRun, record: RunRecord, event: RunEvent): void {
    if (run.abandoned) return
    run.record = record
    run.bytes += event.json.length
    this.storage?.written(record.tenant_id, event.json.length)
    const stored = this.events.append(record.run_id, event)
    // Usually every earlier event has been streamed already (a mode's emit
    // waits for its step), and then this one need only wait for its commit.
    const ready = run.pending === 0 ? stored : Promise.all([run.chain, stored])
    run.pending++
    run.chain = ready.then(() => {
      if (run.abandoned) return
      this.hub.publish(record.run_id, event)
      this.sink.add(record.run_id, event, event.record !== undefined && isTerminal(record.status))
      this.settle(run, record)
    }, err => {
      if (run.abandoned) return
      this.log.error({ err, runId: record.run_id }, 'could not store a run event; it is neither streamed nor published')
      // Even when its last event could not be stored, the run is over: left
      // active, its waiters and shutdown's drain would wait forever.
      this.settle(run, record)
    })
  }

  private settle (run: ActiveRun, record: RunRecord): void {
    run.pending--
    if (!isTerminal(record.status)) return
    const actor = run.actor
    run.actor = undefined
    if (actor !== undefined) this.actors.give(actor)
    this.release(run)
  }

  /** A run that outlived `RunLimits.lifetimeMs` fails, and its mode is told to stop. */
  private expire (run: ActiveRun, lifetime: number): void {
    if (this.transition(run, { type: 'FAIL' }, { error: { code: 'run_timeout', message: `the run lasted longer than ${Math.round(lifetime / 1000)} s` }, ended_at: isoNow() })) stop(run)
  }

  /** The run leaves this process's books, and whoever waits for its end gets its record. */
  private release (run: ActiveRun): void {
    const record = run.record
    clearTimeout(run.deadline)
    this.active.delete(record.run_id)
    this.counts.remove(record.tenant_id, run.address)
    this.storage?.released(record.tenant_id, run.bytes)
    run.end?.(record)
  }
}

function stop (run: ActiveRun): void {
  run.stopped = true
  run.abort?.abort()
}

/** The mode's cancellation signal, made on first use (an AbortController is costly next to a short run). */
function signal (run: ActiveRun): AbortSignal {
  run.abort ??= new AbortController()
  if (run.stopped) run.abort.abort()
  return run.abort.signal
}

/** Resolves with the run's terminal record once its last event is stored and streamed (or could not be stored). */
function ended (run: ActiveRun): Promise<RunRecord> {
  run.ended ??= new Promise(resolve => { run.end = resolve })
  return run.ended
}
