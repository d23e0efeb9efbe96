export interface BusMessage {
  key: string
  value: Buffer | string
  headers: Record<string, string>
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
  start(): Promise<void>
  publish(topic: string, messages: BusMessage[]): Promise<void>
  /** Throws when the bus cannot take messages now (readiness). */
  probe(): Promise<void>
  /**
   * Why the bus is known to be down (its last send or probe failed), or
   * undefined when it is up or nothing is known yet: lets a caller refuse at
   * once rather than wait for a publish deadline.
   */
  unavailable(): string | undefined
  close(): Promise<void>
}
