import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const MODULE = new URL('../../dist/ops/process-warnings.js', import.meta.url).href
const PINO = new URL('../../node_modules/pino/pino.js', import.meta.url).href
const KAFKAJS = new URL('../../node_modules/kafkajs/package.json', import.meta.url).href

/**
 * A fresh node process (the runner has warning listeners of its own) that
 * logs at `level` to stdout, hands its warnings to the log when `routed`, then
 * draws a deprecation and the idle collector's `vm.measureMemory` warning.
 */
async function warn (routed: boolean, level = 'debug'): Promise<{ lines: Array<Record<string, unknown>>, stderr: string }> {
  const script = `
    import pino from ${JSON.stringify(PINO)}
    import { measureMemory } from 'node:vm'
    import { logProcessWarnings } from ${JSON.stringify(MODULE)}
    const log = pino({ level: ${JSON.stringify(level)} })
    if (${routed}) logProcessWarnings(log)
    process.emitWarning('old() is going away', { type: 'DeprecationWarning', code: 'GW0001' })
    await measureMemory({ execution: 'eager' })
    await new Promise(resolve => setImmediate(resolve))
  `
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script])
  return { lines: stdout.split('\n').filter(Boolean).map(line => JSON.parse(line) as Record<string, unknown>), stderr }
}

t.test('a process warning is a log line, not text on stderr', async t => {
  const { lines, stderr } = await warn(true)
  t.equal(stderr, '', 'nothing printed beside the log')
  const deprecation = lines.find(l => (l['warning'] as { name?: string } | undefined)?.name === 'DeprecationWarning')
  t.match(deprecation, { level: 40, msg: 'process warning', warning: { message: 'old() is going away', code: 'GW0001' } })
  const experimental = lines.find(l => (l['warning'] as { name?: string } | undefined)?.name === 'ExperimentalWarning')
  t.match(experimental, { level: 20, warning: { message: /^vm\.measureMemory / } }, "the idle collector's own warning is debug")
})

t.test("at info the idle collector's warning is not seen at all; without the routing Node prints both", async t => {
  const quiet = await warn(true, 'info')
  t.equal(quiet.stderr, '')
  t.same(quiet.lines.map(l => (l['warning'] as { name: string }).name), ['DeprecationWarning'])
  const plain = await warn(false)
  t.match(plain.stderr, /DeprecationWarning: old\(\) is going away[\s\S]*ExperimentalWarning: vm\.measureMemory/)
})

/** A fresh routed process at debug that sets a negative timeout: kafkajs's request queue's own, or one of its own. */
async function negativeTimeout (fromKafkajs: boolean): Promise<Array<Record<string, unknown>>> {
  const script = `
    import pino from ${JSON.stringify(PINO)}
    import { createRequire } from 'node:module'
    import { logProcessWarnings } from ${JSON.stringify(MODULE)}
    logProcessWarnings(pino({ level: 'debug' }))
    if (${fromKafkajs}) {
      const RequestQueue = createRequire(${JSON.stringify(KAFKAJS)})('./src/network/requestQueue/index.js')
      const queue = new RequestQueue({ logger: {} })
      queue.scheduleCheckPendingRequests()
      clearTimeout(queue.throttleCheckTimeoutId)
    } else setTimeout(() => {}, -5)
    await new Promise(resolve => setTimeout(resolve, 5))
  `
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script])
  return stdout.split('\n').filter(Boolean).map(line => JSON.parse(line) as Record<string, unknown>)
}

t.test("kafkajs's negative timeout is debug; any other is a warning (Node 23 and later warn of them)", async t => {
  const warned = Number(process.versions.node.split('.')[0]) >= 23
  const kafkajs = await negativeTimeout(true)
  const ours = await negativeTimeout(false)
  if (!warned) {
    t.same([...kafkajs, ...ours], [], 'Node 20 and 22 say nothing')
    return
  }
  t.match(kafkajs, [{ level: 20, msg: 'process warning', warning: { name: 'TimeoutNegativeWarning' } }])
  t.match(ours, [{ level: 40, msg: 'process warning', warning: { name: 'TimeoutNegativeWarning', message: /^-5 is a negative number/ } }])
})
