import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const MODULE = new URL('../../dist/ops/process-warnings.js', import.meta.url).href
const PINO = new URL('../../node_modules/pino/pino.js', import.meta.url).href

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
