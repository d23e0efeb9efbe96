import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { startGateway } from '../../src/main.js'
import { LIFECYCLE_EVENT } from '../../src/runs/catalogue.js'
import { encodeEvent, eventOwner } from '../../src/runs/events.js'
import { RunStore } from '../../src/runs/store.js'
import { openState } from '../../src/state/index.js'

/**
 * A gateway stopped while its first retention sweep runs. lmdb-js frees, at
 * close, the read transaction a cursor of a slice begun later would use: the
 * process then read freed memory, and crashed (SIGSEGV in a later malloc) or
 * threw from lmdb's own timer, a few times in ten under load.
 */
t.test('a gateway stopped during its first retention sweep waits for the slice in progress and begins no other', async t => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-stop-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const state = openState(dataDir)
  const store = new RunStore(state)
  const ended = '2026-01-01T00:00:00.000Z'
  await Promise.all(Array.from({ length: 10_000 }, (_, i) => {
    const id = `run-${i}`
    const record = JSON.stringify({ run_id: id, tenant_id: 't', mode: 'echo', message: 'm', status: 'succeeded', created_at: ended, started_at: ended, ended_at: ended, result: null, answer: null, artifacts: [], conversation_id: null, error: null, last_event_id: 1 })
    const event = encodeEvent(eventOwner(id, 't'), 1, LIFECYCLE_EVENT.succeeded, 'succeeded', `{"status":"succeeded","run":${record}}`, ended)
    event.record = record
    return store.append(id, event)
  }))
  // Indexed already, as a store written by this version is: the sweep begins its first slice as the gateway starts listening.
  await store.buildIndexes()
  await state.close()

  const lines: Array<{ level: number, msg: string }> = []
  const sink = new Writable({ write (chunk: Buffer, _encoding, done) { lines.push(JSON.parse(chunk.toString()) as { level: number, msg: string }); done() } })
  const config = loadConfig({ PORT: '0', HARNESS_PORT: '0', DATA_DIR: dataDir, HARNESS_RETENTION_S: '1', ROLES: 'harness', LOG_LEVEL: 'info' })
  const gateway = await startGateway(config, pino({ level: 'info' }, sink))
  await gateway.stop()
  // A slice begun after the stop would start at the next turn of the loop, after the last one's commit: two turns see it.
  for (let turn = 0; turn < 2; turn++) await new Promise(resolve => setImmediate(resolve))
  t.same(lines.filter(l => l.level >= 50).map(l => l.msg), [], 'nothing failed, during the stop or after it')

  const after = openState(dataDir)
  t.teardown(() => after.close())
  const left = new RunStore(after)
  const kept = Array.from({ length: 10_000 }, (_, i) => left.get(`run-${i}`)).filter(r => r !== undefined).length
  t.equal(kept, 8000, 'the sweep ended after the slice it had begun: 2000 removed, the rest left for the next start')
})
