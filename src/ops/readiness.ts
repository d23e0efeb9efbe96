/** Throws when the component is not ready; may return details to show (a backlog, say). */
export type Probe = () => Promise<void | Record<string, unknown>> | void | Record<string, unknown>

export interface ComponentState {
  ready: boolean
  error?: string
  [detail: string]: unknown
}

const PROBE_TIMEOUT_MS = 2000

/**
 * Named readiness probes (lmdb, bus, storage, ...). A probe that throws or
 * hangs past the timeout marks its component not ready, with the reason.
 */
export class Readiness {
  private readonly probes = new Map<string, Probe>()

  add (name: string, probe: Probe): void {
    this.probes.set(name, probe)
  }

  async check (): Promise<{ ready: boolean, components: Record<string, ComponentState> }> {
    const entries = await Promise.all([...this.probes].map(async ([name, probe]) => [name, await runProbe(probe)] as const))
    const components = Object.fromEntries(entries)
    return { ready: entries.every(([, s]) => s.ready), components }
  }
}

async function runProbe (probe: Probe): Promise<ComponentState> {
  let timer: NodeJS.Timeout | undefined
  try {
    const details = await Promise.race([
      probe(),
      new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer in ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS) })
    ])
    return { ready: true, ...details }
  } catch (err) {
    return { ready: false, error: (err as Error).message }
  } finally {
    clearTimeout(timer)
  }
}
