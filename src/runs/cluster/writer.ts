import type { Producer } from 'kafkajs'
import type { Logger } from 'pino'
import { eventTenant } from '../events.js'
import type { EventLog } from '../manager.js'
import type { LoggedEvent, RunStore } from '../store.js'
import type { RunEvent } from '../types.js'
import { EVENT_SCHEMA } from './log-codec.js'

/** A transaction stops growing here, so many events share one only while they are small. */
const MAX_TRANSACTION_BYTES = 512 * 1024

export interface WriterOptions {
  partition: number
  runsTopic: string
  commandsTopic: string
  groupId: string
  /** The partition's transactional producer, already initialised (which fenced every earlier owner). */
  producer: Producer
  store: RunStore
  maxBatch: number
  lingerMs: number
  /** False once this process may no longer be the partition's owner (its group session may have lapsed). */
  held: () => boolean
  /** Told once, with the first failure: nothing is written for the partition after it. */
  lost: (err: Error) => void
  log: Logger
}

interface Pending extends LoggedEvent {
  done: (ok: boolean) => void
  fail: (err: Error) => void
}

/**
 * The only way events of a partition reach the runs topic: in Kafka
 * transactions of the partition's own `transactional.id`, each carrying
 * the events made meanwhile and the offset of the commands they answer.
 * An event counts as committed (and may be streamed) only once its
 * transaction committed and it is stored in LMDB with the partition's new
 * offset. The first failure of any kind ends the writer: a fenced producer
 * (a newer owner initialised the same id) or a lapsed session must never
 * write again, and after any other failure the outcome of the transaction is
 * not known, so the partition is taken up afresh from the log.
 */
export class PartitionWriter implements EventLog {
  private queue: Pending[] = []
  private commandsOffset: number | undefined
  private timer: NodeJS.Timeout | undefined
  private flushing = false
  private failure: Error | undefined
  /** Events waiting or in a transaction. */
  backlog = 0

  constructor (private readonly options: WriterOptions) {}

  append (runId: string, event: RunEvent): Promise<boolean> {
    if (this.failure) return Promise.reject(this.failure)
    return new Promise((done, fail) => {
      this.queue.push({ runId, event, done, fail })
      this.backlog++
      this.schedule()
    })
  }

  /** Commands up to `nextOffset` were handed over: their offset commits with the events they made. */
  consumed (nextOffset: number): void {
    if (this.failure) return
    this.commandsOffset = nextOffset
    this.schedule()
  }

  /** Stops writing: everything not committed fails with `err`. */
  close (err: Error): void {
    if (this.failure) return
    this.failure = err
    clearTimeout(this.timer)
    this.rejectAll(this.queue, err)
    this.queue = []
  }

  get closed (): boolean {
    return this.failure !== undefined
  }

  private schedule (): void {
    if (this.flushing || this.failure) return
    if (this.queue.length >= this.options.maxBatch) {
      clearTimeout(this.timer)
      this.timer = undefined
      void this.flush()
    } else {
      this.timer ??= setTimeout(() => { this.timer = undefined; void this.flush() }, this.options.lingerMs)
    }
  }

  private async flush (): Promise<void> {
    this.flushing = true
    try {
      while (!this.failure && (this.queue.length > 0 || this.commandsOffset !== undefined)) {
        const batch = this.take()
        const offset = this.commandsOffset
        this.commandsOffset = undefined
        try {
          await this.transact(batch, offset)
        } catch (err) {
          this.rejectAll(batch, err as Error)
          this.fail(err as Error)
        }
      }
    } finally {
      this.flushing = false
    }
    if (this.queue.length > 0 || this.commandsOffset !== undefined) this.schedule()
  }

  private take (): Pending[] {
    let size = 0
    let bytes = 0
    while (size < this.queue.length && size < this.options.maxBatch && (size === 0 || bytes < MAX_TRANSACTION_BYTES)) bytes += this.queue[size++]!.event.json.length
    const batch = this.queue.slice(0, size)
    this.queue = this.queue.slice(size)
    return batch
  }

  private async transact (batch: Pending[], commandsOffset: number | undefined): Promise<void> {
    const { producer, partition, runsTopic, commandsTopic, groupId, store, held } = this.options
    if (!held()) throw new Error('the group session lapsed: this process may no longer own the partition')
    const txn = await producer.transaction()
    let next: number | undefined
    try {
      if (batch.length > 0) {
        const messages = batch.map(({ runId, event }) => ({ key: runId, value: event.json, partition, headers: { 'client-id': eventTenant(event.json) ?? '', schema: EVENT_SCHEMA } }))
        const [meta] = await txn.send({ topic: runsTopic, acks: -1, messages })
        next = Number(meta!.baseOffset) + batch.length
      }
      if (commandsOffset !== undefined) {
        await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: commandsTopic, partitions: [{ partition, offset: String(commandsOffset) }] }] })
      }
      if (!held()) throw new Error('the group session lapsed: this process may no longer own the partition')
      await txn.commit()
    } catch (err) {
      if (txn.isActive()) await txn.abort().catch(() => undefined)
      throw err
    }
    // The next transaction need not wait for this one's LMDB commit (a flush of the disk): lmdb-js
    // commits in call order, so the events are still stored, and then told, in log order.
    const stored = next === undefined ? Promise.resolve([]) : store.appendLogged(partition, next, batch)
    stored.then(() => {
      for (const p of batch) p.done(true)
      this.backlog -= batch.length
    }, err => {
      this.rejectAll(batch, err as Error)
      this.fail(err as Error)
    })
  }

  private fail (err: Error): void {
    if (this.failure) return
    this.options.log.warn({ err: err.message, partition: this.options.partition }, 'writing run events for the partition failed; the partition is given up')
    this.close(err)
    this.options.lost(err)
  }

  private rejectAll (list: Pending[], err: Error): void {
    for (const p of list) p.fail(err)
    this.backlog -= list.length
  }
}
