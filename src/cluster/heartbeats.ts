import { hostname } from 'node:os'
import type { Logger } from 'pino'
import { localProcessAlive, processIdentity, type Incarnation, type RemoteOwner } from '../state/index.js'
import type { SharedDocuments } from './documents.js'

/** How often a node rewrites its heartbeat. */
export const NODE_BEAT_MS = 5_000
/**
 * A heartbeat not rewritten for this long belongs to a node that is gone:
 * three missed beats and the one-second resolution of S3's clock, so a
 * store that is slow for one beat does not make a live node look dead.
 */
export const NODE_STALE_MS = 20_000
/** Heartbeats left by nodes that never stopped cleanly are removed past this age. */
const FORGET_MS = 24 * 3600 * 1000

const PREFIX = 'nodes/'

interface Beat {
  incarnation: string
  host: string
  pid: number
  /** Kernel boot and pid namespace, and the process's start time there: see localProcessAlive. */
  host_id: string | undefined
  proc_start: string | undefined
  started_at: string
  beat_at: string
}

/**
 * This process's heartbeat among the nodes sharing the bucket: the document
 * `_gateway/nodes/<incarnation>.json`, rewritten every NODE_BEAT_MS. Another
 * node is alive while its heartbeat is younger than NODE_STALE_MS, measured
 * on the store's clock (SharedDocuments.age), so the nodes' own clocks may
 * disagree. The first beat is written before `start` resolves, so nothing
 * this process claims is ever held by an incarnation without a heartbeat.
 */
export class NodeHeartbeats {
  private timer: NodeJS.Timeout | undefined
  private failing = false
  private readonly startedAt = new Date().toISOString()
  private readonly process = processIdentity()

  constructor (private readonly documents: SharedDocuments, readonly id: string, private readonly log: Logger) {}

  async start (): Promise<void> {
    await this.beat()
    this.timer = setInterval(() => {
      this.beat().then(() => {
        if (this.failing) this.log.info('node heartbeat written again')
        this.failing = false
      }, err => {
        if (!this.failing) this.log.warn({ err: (err as Error).message }, 'node heartbeat not written; other nodes take this node for dead after 20 s without one')
        this.failing = true
      })
    }, NODE_BEAT_MS).unref()
    this.forgetOld().catch(err => this.log.warn({ err: (err as Error).message }, 'old node heartbeats not removed'))
  }

  /** Stops beating and removes the heartbeat: whatever this node still holds is free at once. */
  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.documents.delete(this.key(this.id)).catch(err => this.log.warn({ err: (err as Error).message }, 'node heartbeat not removed; it goes stale in 20 s'))
  }

  /**
   * A fresh heartbeat of a process that ran under this kernel (a node
   * restarted on the same machine, with a new DATA_DIR registration) is
   * checked against the kernel too, so its kill -9 frees its claims at once.
   */
  async isAlive (id: string): Promise<boolean> {
    if (id === this.id) return true
    const age = await this.documents.age(this.key(id))
    if (age === undefined || age >= NODE_STALE_MS) return false
    const beat = (await this.documents.get<Beat>(this.key(id)))?.value
    return beat === undefined ? false : localProcessAlive(beat.host_id, beat.pid, beat.proc_start) ?? true
  }

  private beat (): Promise<string> {
    const beat: Beat = { incarnation: this.id, host: hostname(), pid: process.pid, host_id: this.process.host, proc_start: this.process.proc_start, started_at: this.startedAt, beat_at: new Date().toISOString() }
    return this.documents.put(this.key(this.id), beat)
  }

  /** Heartbeats of nodes killed long ago: nobody asks about them any more, and they would pile up. */
  private async forgetOld (): Promise<void> {
    // A day is far beyond any skew between this clock and the store's.
    for (const { key, lastModified } of await this.documents.list(PREFIX)) {
      if (key !== this.key(this.id) && Date.now() - lastModified > FORGET_MS) await this.documents.delete(key)
    }
  }

  private key (id: string): string {
    return `${PREFIX}${id}.json`
  }
}

/**
 * Who holds what in a cluster: an incarnation on this DATA_DIR (another
 * worker of this node) is asked of the kernel, at once; any other of its
 * heartbeat in S3.
 */
export function clusterOwner (local: Incarnation, nodes: NodeHeartbeats): RemoteOwner {
  return {
    id: local.id,
    isAlive: async id => local.knows(id) ? local.isAlive(id) : nodes.isAlive(id)
  }
}
