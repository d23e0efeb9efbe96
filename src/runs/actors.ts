import { createActor, type Actor } from 'xstate'
import { runLifecycle } from './machine.js'
import { isTerminal } from './types.js'

export type RunActor = Actor<typeof runLifecycle>

/** Idle actors kept, at most: more than a core's runs in flight under a closed-loop load (about 200 here). */
const KEEP = 512

/**
 * The actors of runs that have ended, handed to the next runs.
 *
 * An xstate actor with its actor system is about 3 KB of maps, sets and
 * closures, and it lives as long as its run is in flight. Under load that is
 * longer than V8's young-generation collections are apart, so each run's
 * actor was copied into the old generation and freed only by a full
 * collection: with a new actor per run, 20.5 µs of GC a run; with the
 * actors reused, 8.1 µs (`CPU_AB_SCENARIO=runs node bench/cpu-ab.mjs`). Each run in flight
 * still has an actor of its own, taken when it is created and given back
 * once its terminal event is committed; a run never touches its actor after
 * that (`RunManager.settle` drops it).
 */
export class ActorPool {
  private readonly idle: RunActor[] = []

  constructor (private readonly keep = KEEP) {}

  /** A started actor in `queued`. */
  take (): RunActor {
    return this.idle.pop() ?? createActor(runLifecycle).start()
  }

  /** Takes back the actor of a run that has ended; one still in flight is stopped, never reused. */
  give (actor: RunActor): void {
    if (isTerminal(actor.getSnapshot().context) && this.idle.length < this.keep) {
      actor.send({ type: 'REUSE' })
      this.idle.push(actor)
    } else {
      actor.stop()
    }
  }

  get size (): number {
    return this.idle.length
  }
}
