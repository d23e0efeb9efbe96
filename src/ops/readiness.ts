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
 * A component the port can serve without (`required: false`: the bus, whose
 * outage the evidence ledger and the run outbox ride out) is reported but
 * does not make the whole not ready; `check(also)` requires it too, for a
 * load balancer pool that sends only what needs it (telemetry needs the bus).
 */
export class Readiness {
  private readonly probes = new Map<string, { probe: Probe, required: boolean }>()

  add (name: string, probe: Probe, { required = true }: { required?: boolean } = {}): void {
    this.probes.set(name, { probe, required })
  }

  has (name: string): boolean {
    return this.probes.has(name)
  }

  async check (also?: string): Promise<{ ready: boolean, components: Record<string, ComponentState> }> {
    const entries = await Promise.all([...this.probes].map(async ([name, { probe, required }]) => [name, await runProbe(probe), required || name === also] as const))
    const components = Object.fromEntries(entries.map(([name, state]) => [name, state]))
    return { ready: entries.every(([, s, required]) => s.ready || !required), components }
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
