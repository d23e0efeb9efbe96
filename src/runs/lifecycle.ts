import { LIFECYCLE_EVENT } from './catalogue.js'
import { encodeEvent, encodeRecord, eventOwner, recordHead } from './events.js'
import { isoNow } from '../ops/index.js'
import type { RunEvent, RunRecord } from './types.js'

export const INTERRUPTED = { code: 'interrupted', message: 'the process stopped while the run was in flight' }

/** The parts of a run's events serialised once per run (`eventOwner`, `recordHead`). */
export interface RunHead {
  owner: string
  head: string
}

/**
 * The event a status is entered with (`LIFECYCLE_EVENT`), carrying the record
 * as of it under `data.run`; that same JSON is what `runs-v3` stores. A
 * cancelled run ends with `run.failed` whose data says `reason: "cancelled"`,
 * as the origin harness ends one.
 */
export function lifecycleEvent (run: RunHead, record: RunRecord, at: string): RunEvent {
  const json = encodeRecord(run.head, record)
  let message: string
  let extra = ''
  switch (record.status) {
    case 'queued': message = 'Run queued'; break
    case 'running': message = 'Run started'; break
    case 'succeeded': message = 'Run completed'; break
    case 'cancelled':
      message = 'Run cancelled'
      extra = ',"reason":"cancelled","error":"cancelled"'
      break
    case 'failed': {
      const code = record.error?.code ?? 'mode_failed'
      message = `Run failed: ${record.error?.message ?? code}`
      extra = `,"reason":${code === INTERRUPTED.code ? '"interrupted"' : '"error"'},"error":${JSON.stringify(code)}`
    }
  }
  const event = encodeEvent(run.owner, record.last_event_id, LIFECYCLE_EVENT[record.status], message, `{"status":"${record.status}"${extra},"run":${json}}`, at)
  event.record = json
  return event
}

/** The event that ends `stale` (a record as stored, in flight) as interrupted, next after its last event. */
export function interruptedEnd (stale: RunRecord): RunEvent {
  const endedAt = isoNow()
  const record: RunRecord = { ...stale, status: 'failed', ended_at: endedAt, error: INTERRUPTED, last_event_id: stale.last_event_id + 1 }
  const owner = eventOwner(record.run_id, record.tenant_id)
  return lifecycleEvent({ owner, head: recordHead(owner, record) }, record, endedAt)
}

