import { readFileSync } from 'node:fs'

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))

/** A hang is a failure: no answer within this fails the load, far past any deadline of the gateway. */
const ANSWER_WITHIN_MS = 30_000
/** A record still not acknowledged this long after the load was told to stop fails it. */
const GIVE_UP_MS = 90_000

export interface TelemetryLoad {
  /** Every answer's status, by X-Request-Id, in the order they came. */
  answers: Map<string, number[]>
  /** Records acknowledged (200) so far. */
  acknowledged: () => number
  /** Resolves once `n` more records than now were acknowledged. */
  moreAcknowledged: (n: number) => Promise<void>
  /** Statuses seen so far, all records together. */
  statuses: () => number[]
  /** Stops starting records, lets every started one retry until acknowledged, and resolves then. */
  stop: () => Promise<void>
}

/**
 * Telemetry from `workers` clients that behave as the spec tells them: one
 * record at a time, and a record answered 5xx is sent again with the same
 * X-Request-Id after its Retry-After (or 200 ms), until it is acknowledged.
 * Records are `{prefix}-{worker}-{n}`; the body's `seq` is the same id.
 */
export function telemetryLoad (url: string, token: string, workers: number, prefix: string): TelemetryLoad {
  const answers = new Map<string, number[]>()
  let stopping = false
  let stopAt = Infinity
  let acked = 0
  const waiters: Array<{ at: number, resolve: () => void }> = []

  const send = async (id: string, asset: string): Promise<number> => {
    const res = await fetch(`${url}/v1/asset/track`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': id, 'x-request-timestamp': '1' },
      body: JSON.stringify({ ...example, asset_id: asset, seq: id }),
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS)
    })
    await res.arrayBuffer()
    answers.get(id)!.push(res.status)
    if (res.status >= 500) await new Promise(resolve => setTimeout(resolve, res.headers.get('retry-after') === null ? 200 : 1000 * Number(res.headers.get('retry-after'))))
    return res.status
  }

  const worker = async (w: number): Promise<void> => {
    for (let n = 0; !stopping; n++) {
      const id = `${prefix}-${w}-${n}`
      answers.set(id, [])
      while (await send(id, `asset-${w}`) !== 200) {
        if (Date.now() > stopAt + GIVE_UP_MS) throw new Error(`${id} was never acknowledged: ${answers.get(id)!.join(', ')}`)
      }
      acked++
      for (const waiter of waiters.filter(x => x.at <= acked)) { waiters.splice(waiters.indexOf(waiter), 1); waiter.resolve() }
    }
  }
  const running = Promise.all(Array.from({ length: workers }, (_, w) => worker(w)))
  running.catch(() => undefined)

  return {
    answers,
    acknowledged: () => acked,
    moreAcknowledged: n => new Promise((resolve, reject) => {
      waiters.push({ at: acked + n, resolve })
      running.catch(reject)
    }),
    statuses: () => [...answers.values()].flat(),
    stop: async () => {
      stopping = true
      stopAt = Date.now()
      await running
    }
  }
}
