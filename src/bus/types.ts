import type { StateStore } from '../state/index.js'

export interface BusMessage {
  key: string
  value: Buffer | string
  headers: Record<string, string>
}

/**
 * A value published as bytes received and text after them: the first `end`
 * bytes of `bytes` (UTF-8), then `tail`. It lets a record go out as it
 * came, with members added at its end, without a buffer of its own: a new
 * one per record brought on full collections.
 */
export interface Splice {
  bytes: Buffer
  end: number
  tail: string
}

/** What `publish` takes: a message, or one whose value is a Splice. */
export interface OutgoingMessage {
  key: string
  value: Buffer | string | Splice
  headers: Record<string, string>
}

export function isSplice (value: OutgoingMessage['value']): value is Splice {
  return typeof value === 'object' && !Buffer.isBuffer(value)
}

/** A Splice's value in one piece, as text. */
export function spliceText ({ bytes, end, tail }: Splice): string {
  return bytes.toString('utf8', 0, end) + tail
}

/** The message with its value in one piece, for what cannot write a Splice. */
export function joined (message: OutgoingMessage): BusMessage {
  const { value } = message
  if (!isSplice(value)) return message as BusMessage
  return { key: message.key, value: spliceText(value), headers: message.headers }
}

export interface StoredMessage extends BusMessage {
  topic: string
  offset: number
  timestamp: number
}

/**
 * Where records go. `publish` resolves only when the messages are durable
 * (broker acks = all, or committed to the local log), in order per key.
 */
export interface Bus {
  readonly kind: 'local' | 'kafka'
  /**
   * How many publish calls may overlap with their order kept (absent: one at
   * a time). The local bus: LMDB commits in the order asked and the wait is
   * mostly the disk's flush, which overlapping commits share. Kafka through
   * kafkajs: one per topic (its idempotent producer loses messages when
   * sends overlap).
   */
  readonly maxInFlight?: number
  start(): Promise<void>
  publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void>
  /** Throws when the bus cannot take messages now (readiness). */
  probe(): Promise<void>
  /**
   * Why `topic` is known to be unable to take messages (its last send, or
   * the last probe, failed), or undefined when it is up or nothing is known
   * yet: lets a caller refuse at once rather than wait for a publish
   * deadline. Without a topic: why any topic is.
   */
  unavailable(topic?: string): string | undefined
  close(): Promise<void>
}

/** A bus whose topics can also be followed (both buses are; writers that only publish need `Bus`). */
export interface FollowableBus extends Bus {
  /**
   * Follows `topic`: `handler` gets its messages in order per key, a batch
   * at a time, and the next batch only once it resolved. `group` names whose
   * position it is (a restart resumes there; a new group starts at the
   * beginning with `fromStart`, else at the end).
   */
  subscribe(topic: string, options: SubscribeOptions, handler: (messages: StoredMessage[]) => Promise<void>): Subscription
}

export interface SubscribeOptions {
  group: string
  fromStart: boolean
}

export interface Subscription {
  /**
   * Resolves true once every message the topic held when it was called has
   * been handled, false when `timeoutMs` passed first.
   */
  caughtUp(timeoutMs: number): Promise<boolean>
  stop(): Promise<void>
}

/**
 * A bus whose log lives in an LMDB environment (the local bus): an append
 * made inside a write transaction of that environment commits, or not,
 * together with everything else the transaction writes.
 */
export interface TransactionalLog extends Bus {
  readonly state: StateStore
  /** Call inside a write transaction of `state`. */
  appendInTransaction(topic: string, messages: BusMessage[]): void
}

/** `bus` as a log that can join transactions of `state`, if it is one. */
export function transactionalLog (bus: Bus, state: StateStore): TransactionalLog | undefined {
  const log = bus as Partial<TransactionalLog>
  return log.state === state && typeof log.appendInTransaction === 'function' ? bus as TransactionalLog : undefined
}
