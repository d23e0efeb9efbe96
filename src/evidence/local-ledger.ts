import type { Logger } from 'pino'
import type { Bus, BusMessage } from '../bus/index.js'
import type { Owner, StateStore } from '../state/index.js'
import type { Acknowledgment } from './claims.js'
import { IdempotencyStore } from './idempotency.js'
import type { EvidenceLedger, LedgerClaim, LedgerOutcome } from './ledger.js'
import { Outbox } from './outbox.js'

/** Never aborts: on one node a claim lasts as long as its process, and no other process can take it from a live one. */
const NEVER = new AbortController().signal
const SWEEP_MS = 10 * 60 * 1000

/**
 * The ledger of one node: claims in LMDB (`IdempotencyStore`), and the
 * outbox written in the same transaction as the claim's completion, which
 * its relay publishes. Attempts never overlap here (a claim is taken over
 * only from a dead process), so objects keep their plain keys.
 */
export class LocalLedger implements EvidenceLedger {
  readonly claims: IdempotencyStore
  readonly outbox: Outbox
  private sweeper: NodeJS.Timeout | undefined

  constructor (private readonly state: StateStore, bus: Bus, ttlS: number, owner: Owner, private readonly publishWaitMs: number, private readonly log: Logger) {
    this.claims = new IdempotencyStore(state, ttlS, owner)
    this.outbox = new Outbox(state, bus, log.child({ component: 'outbox' }), owner)
  }

  start (): void {
    this.outbox.start()
    const sweep = (): void => { this.claims.sweep().catch(err => this.log.error({ err, component: 'claims' }, 'idempotency sweep failed')) }
    // At once too: the claims of a process that died are freed on contact anyway, this clears the rest.
    sweep()
    this.sweeper = setInterval(sweep, SWEEP_MS).unref()
  }

  async stop (): Promise<void> {
    clearInterval(this.sweeper)
    await this.outbox.stop()
  }

  async claim (key: string): Promise<LedgerClaim> {
    const claim = await this.claims.claim(key)
    return claim.kind === 'claimed' ? { kind: 'claimed', attempt: undefined, lost: NEVER } : claim
  }

  /** The claim's completion and the outbox entry in one transaction; then, while the bus is up, the wait for the relay to publish it. */
  async accept (key: string, ack: Acknowledgment, topic: string, message: BusMessage): Promise<LedgerOutcome> {
    const entry = await this.state.transaction(() => {
      this.claims.complete(key, ack)
      return this.outbox.enqueueInTransaction(topic, message)
    })
    await this.outbox.published(entry, this.publishWaitMs)
    return { kind: 'accepted' }
  }

  /** A claim here is never taken from a live process: there is nothing else to tell. */
  async truth (): Promise<LedgerOutcome> {
    return { kind: 'in_progress' }
  }

  release (key: string): Promise<void> {
    return this.claims.release(key)
  }

  get backlog (): number {
    return this.outbox.backlog
  }

  oldestAgeMs (): number {
    return this.outbox.oldestAgeMs()
  }

  get lastError (): string | undefined {
    return this.outbox.lastError
  }
}
