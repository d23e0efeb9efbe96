import type { RunEvent } from './types.js'

export type Subscriber = (event: RunEvent) => void

/** Live subscribers per run. Events are delivered only after they are stored. */
export class RunHub {
  private readonly subscribers = new Map<string, Set<Subscriber>>()

  subscribe (runId: string, subscriber: Subscriber): () => void {
    let set = this.subscribers.get(runId)
    if (!set) {
      set = new Set()
      this.subscribers.set(runId, set)
    }
    set.add(subscriber)
    return () => {
      set.delete(subscriber)
      if (set.size === 0 && this.subscribers.get(runId) === set) this.subscribers.delete(runId)
    }
  }

  publish (runId: string, event: RunEvent): void {
    const set = this.subscribers.get(runId)
    if (set) for (const s of set) s(event)
  }

  has (runId: string): boolean {
    return this.subscribers.has(runId)
  }

  /** Runs that have subscribers now. */
  runIds (): IterableIterator<string> {
    return this.subscribers.keys()
  }
}
