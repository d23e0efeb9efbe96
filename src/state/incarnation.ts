import { randomBytes } from 'node:crypto'
import { readFileSync, readlinkSync } from 'node:fs'
import type { Database } from 'lmdb'
import type { StateStore } from './lmdb.js'

interface Registration {
  pid: number
  /** Boot and pid namespace of the process: where its pid means something. */
  host: string | undefined
  /** Its start time as the kernel counts it (/proc/<pid>/stat), which no later process with that pid shares. */
  proc_start: string | undefined
  started_at: number
  heartbeat_at: number
}

/** How often a process renews its registration. */
export const HEARTBEAT_MS = 5_000
/** A registration not renewed for this long belongs to a process that is gone (when its pid cannot be checked). */
export const STALE_MS = 30_000

/** What holders of claims need: who this process is, and whether another holder still lives. */
export interface Owner {
  readonly id: string
  isAlive(id: string): boolean
}

/**
 * This process's incarnation among those sharing DATA_DIR: an id made at
 * start (pid and random bits), registered in LMDB. Whatever a process holds
 * (an idempotency claim, a partial file, the outbox relay) is stamped with
 * its id, and is free once that incarnation is no longer alive.
 *
 * Alive is decided, for a process on this kernel and in this pid namespace,
 * from the kernel itself: its pid exists and started when it registered
 * (so a kill -9 frees what it held at once, and a recycled pid does not
 * inherit it). For a process elsewhere (another container sharing the
 * volume), from its heartbeat: renewed every HEARTBEAT_MS, stale after STALE_MS.
 */
export class Incarnation implements Owner {
  readonly id = `${process.pid}-${randomBytes(4).toString('hex')}`
  private readonly db: Database<Registration, string>
  private readonly host = hostIdentity()
  private timer: NodeJS.Timeout | undefined

  private constructor (state: StateStore, private readonly now: () => number) {
    this.db = state.openDB<Registration, string>({ name: 'incarnations' })
  }

  /** Registers this process and forgets the registrations of processes that are gone. */
  static async start (state: StateStore, now: () => number = Date.now): Promise<Incarnation> {
    const self = new Incarnation(state, now)
    const at = now()
    await self.db.put(self.id, { pid: process.pid, host: self.host, proc_start: processStart(process.pid), started_at: at, heartbeat_at: at })
    await state.transaction(() => {
      for (const { key } of self.db.getRange()) if (!self.isAlive(key)) self.db.remove(key)
    })
    self.timer = setInterval(() => {
      const entry = self.db.get(self.id)
      if (entry) self.db.put(self.id, { ...entry, heartbeat_at: self.now() }).catch(() => undefined)
    }, HEARTBEAT_MS).unref()
    return self
  }

  isAlive (id: string): boolean {
    if (id === this.id) return true
    const entry = this.db.get(id)
    if (!entry) return false
    if (entry.host !== undefined && entry.host === this.host) return entry.proc_start !== undefined && processStart(entry.pid) === entry.proc_start
    return this.now() - entry.heartbeat_at < STALE_MS
  }

  /** Whether `id` is this process or one registered on this DATA_DIR (alive or not). */
  knows (id: string): boolean {
    return id === this.id || this.db.get(id) !== undefined
  }

  /** Unregisters: whatever this process still holds is free from now on. */
  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.db.remove(this.id)
  }
}

/**
 * Whether process `pid` (started at `procStart`, registered from kernel
 * `host`) lives, if that can be asked of this kernel: undefined when it ran
 * under another kernel or pid namespace (or off Linux). For registrations
 * kept elsewhere (an evidence claim in S3) of a process that may have run
 * on this machine: a kill -9 then frees what it held at once.
 */
export function localProcessAlive (host: string | undefined, pid: number, procStart: string | undefined): boolean | undefined {
  const here = hostIdentity()
  if (host === undefined || here === undefined || host !== here) return undefined
  return procStart !== undefined && processStart(pid) === procStart
}

/** This process as `localProcessAlive` asks about it. */
export function processIdentity (): { host: string | undefined, proc_start: string | undefined } {
  return { host: hostIdentity(), proc_start: processStart(process.pid) }
}

/** The kernel boot and pid namespace we run in, or undefined off Linux. */
function hostIdentity (): string | undefined {
  try {
    return `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`
  } catch {
    return undefined
  }
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or undefined when no live process has that pid. */
function processStart (pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // After the command name, which may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const state = fields[0]
    if (state === 'Z' || state === 'X') return undefined
    return fields[19]
  } catch {
    return undefined
  }
}
