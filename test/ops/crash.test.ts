import t from 'tap'
import { spawn } from 'node:child_process'

const OPS = new URL('../../dist/ops/index.js', import.meta.url).href

/**
 * A fresh node process whose log is on stdout and which then fails as
 * `failure` (a statement run on a later turn). Its open stdin holds its event
 * loop, as a server's sockets would: it ends only if the failure ends it.
 */
async function crash (failure: string): Promise<{ code: number | null, lines: Array<Record<string, unknown>>, stderr: string }> {
  const script = `
    import { createLogger, logCrashes } from ${JSON.stringify(OPS)}
    const { log, flushSync } = createLogger('info')
    logCrashes(log, flushSync)
    log.info('started')
    process.stdin.resume()
    setImmediate(() => { ${failure} })
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', script])
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', d => { stdout += d })
  child.stderr.on('data', d => { stderr += d })
  const code = await new Promise<number | null>(resolve => child.on('close', resolve))
  return { code, lines: stdout.split('\n').filter(Boolean).map(line => JSON.parse(line) as Record<string, unknown>), stderr }
}

t.test('an uncaught throw ends the process with 1, logged as a fatal line with its stack, nothing on stderr', async t => {
  const { code, lines, stderr } = await crash("throw new Error('boom')")
  t.equal(code, 1, 'it ends by itself, although its stdin holds its loop open')
  t.equal(stderr, '')
  t.match(lines, [{ msg: 'started' }, { level: 60, msg: 'ending on an error nothing handled', origin: 'uncaughtException', err: { message: 'boom', stack: /Error: boom\n/ } }])
})

t.test('a rejection no one awaited ends it the same way', async t => {
  const { code, lines, stderr } = await crash("Promise.reject(new Error('lost'))")
  t.equal(code, 1)
  t.equal(stderr, '')
  t.match(lines.at(-1), { level: 60, origin: 'unhandledRejection', err: { message: 'lost' } })
})

t.test('the lines logged just before are not lost to the buffer: the log is flushed before the exit', async t => {
  const { lines } = await crash("for (let i = 0; i < 100; i++) log.info({ i }, 'burst'); throw new Error('after a burst')")
  // Each once; a chunk that was being written as it failed may land after the rest.
  t.same(lines.filter(l => l['msg'] === 'burst').map(l => l['i'] as number).sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i))
  t.match(lines.filter(l => l['level'] === 60), [{ err: { message: 'after a burst' } }])
})
