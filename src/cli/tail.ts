import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import { LocalBus } from '../bus/index.js'
import type { Config } from '../config/index.js'
import { openState } from '../state/index.js'
import { jsonTextProblems } from '../validation/index.js'
import { UsageError } from './usage.js'

const USAGE = 'usage: gateway tail <topic> [--from N] [--follow]'
const POLL_MS = 200

/**
 * `gateway tail`: prints the local bus log of a topic as JSON lines. With
 * --follow it polls LMDB (a read costs microseconds and sees other
 * processes' commits at once) until interrupted.
 */
export async function tailCommand (config: Config, argv: string[], out: (line: string) => void, signal?: AbortSignal): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { from: { type: 'string' }, follow: { type: 'boolean', short: 'f' } } })
  const topic = positionals[0]
  const from = values.from === undefined ? 0 : Number(values.from)
  if (!topic || !Number.isInteger(from) || from < 0) throw new UsageError(USAGE)
  const state = openState(config.dataDir)
  const bus = new LocalBus(state)
  try {
    const topics = [config.topicTelemetry, config.topicEvidence, config.topicRuns, config.topicRunsControl]
    // A topic neither configured nor in the log is a typo: silence and exit 0 would say it is empty.
    if (!topics.includes(topic) && bus.read(topic, 0, 1).next().done === true) {
      throw new Error(`no topic ${topic} in the local bus of DATA_DIR=${config.dataDir}: the gateway writes ${topics.join(', ')} (TOPIC_TELEMETRY, TOPIC_EVIDENCE, TOPIC_RUNS, TOPIC_RUNS_CONTROL)`)
    }
    let next = from
    do {
      for (const m of bus.read(topic, next)) {
        out(JSON.stringify({ topic, offset: m.offset, timestamp: new Date(m.timestamp).toISOString(), key: m.key, headers: m.headers, value: decode(m.value) }))
        next = m.offset + 1
      }
      if (values.follow) await sleep(POLL_MS, undefined, { signal }).catch(() => undefined)
    } while (values.follow && !signal?.aborted)
    return 0
  } finally {
    await state.close()
  }
}

/**
 * A value as JSON when it is JSON that prints back as it was, else as the
 * text it is. The log may hold anything an earlier version let through
 * (nesting deep enough to overflow JSON.stringify's recursion, `1e309`,
 * duplicated keys): tail shows such a record verbatim rather than crash on
 * it or print it as something else.
 */
function decode (value: string | Buffer): unknown {
  const text = typeof value === 'string' ? value : value.toString('utf8')
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return text
  }
  return Object.keys(jsonTextProblems(Buffer.from(text), parsed)).length === 0 ? parsed : text
}
