import type { RunEvent } from './types.js'

export type Subscriber = (event: RunEvent) => void

interface Subscription {
  event: Subscriber
  detached: (() => void) | undefined
}

/** Live subscribers per run. Events are delivered only after they are stored. */
export class RunHub {
  private readonly subscribers = new Map<string, Set<Subscription>>()

  /** `detached` is called if the run stops being followed here before its end (its partition moved to another process). */
  subscribe (runId: string, subscriber: Subscriber, detached?: () => void): () => void {
    let set = this.subscribers.get(runId)
    if (!set) {
      set = new Set()
      this.subscribers.set(runId, set)
    }
    const entry = { event: subscriber, detached }
    set.add(entry)
    return () => {
      set.delete(entry)
      if (set.size === 0 && this.subscribers.get(runId) === set) this.subscribers.delete(runId)
    }
  }

  publish (runId: string, event: RunEvent): void {
    const set = this.subscribers.get(runId)
    if (set) for (const s of set) s.event(event)
  }

  /** Nothing more of the run comes through here: its subscribers are told, and forgotten. */
  detach (runId: string): void {
    const set = this.subscribers.get(runId)
    this.subscribers.delete(runId)
    if (set) for (const s of set) s.detached?.()
  }

  has (runId: string): boolean {
    return this.subscribers.has(runId)
  }

  /** Subscribers of every run together (the SSE streams of /runs/{id}/events). */
  get subscriberCount (): number {
    let n = 0
    for (const set of this.subscribers.values()) n += set.size
    return n
  }

  /** Runs that have subscribers now. */
  runIds (): IterableIterator<string> {
    return this.subscribers.keys()
  }
}
