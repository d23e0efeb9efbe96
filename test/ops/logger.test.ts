import fs, { openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { createLogger } from '../../src/ops/index.js'
import { until } from '../helpers/http.js'

const lines = (file: string): Array<Record<string, unknown>> => readFileSync(file, 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l) as Record<string, unknown>)

/**
 * A log file and its fd, open until the process exits: the logger's periodic
 * flush (sonic-boom writes, if only an empty string, on an interval) keeps
 * using the fd, so closing it at the end of a test made that write fail with
 * an unhandled EBADF, or, once the next test had reused the fd number, land
 * in its file.
 */
function logTo (t: { testdir: () => string }): { file: string, fd: number } {
  const file = join(t.testdir(), 'log')
  return { file, fd: openSync(file, 'w') }
}

t.test('a lone line is written within the flush period, without a flush call', async t => {
  const { file, fd } = logTo(t)
  const { log } = createLogger('info', fd)
  log.info({ n: 1 }, 'hello')
  await until(() => lines(file).length > 0, 2000)
  const seen = lines(file)
  t.match(seen, [{ level: 30, msg: 'hello', n: 1, pid: process.pid }])
  t.match(seen[0], { time: /^\d{4}-\d\d-\d\dT/ }, 'ISO time')
})

t.test('flush writes every buffered line, in order; below the level nothing is written', async t => {
  const { file, fd } = logTo(t)
  const { log, flush } = createLogger('info', fd)
  for (let i = 0; i < 500; i++) log.info({ i }, 'line')
  log.debug('not at info')
  await flush()
  t.same(lines(file).map(l => l['i']), Array.from({ length: 500 }, (_, i) => i))
})

t.test('lines with characters beyond ASCII arrive whole, in a burst that fills several writes', async t => {
  const { file, fd } = logTo(t)
  const { log, flush } = createLogger('info', fd)
  const text = 'ñandú € 😀 データ'
  for (let i = 0; i < 2_000; i++) log.info({ i, text }, 'line')
  await flush()
  const seen = lines(file)
  t.equal(seen.length, 2_000)
  t.ok(seen.every((l, i) => l['i'] === i && l['text'] === text))
})

t.test('a burst of access-log lines leaves in a few large writes, not one per few lines', async t => {
  const { file, fd } = logTo(t)
  const { log, flush } = createLogger('info', fd)
  const write = fs.write
  let writes = 0
  fs.write = ((...args: Parameters<typeof fs.write>) => {
    if (args[0] === fd) writes++
    return (write as (...a: unknown[]) => void)(...args)
  }) as typeof fs.write
  t.teardown(() => { fs.write = write })
  // About 200 KB, logged in one turn as a loaded process logs its requests.
  for (let i = 0; i < 1_500; i++) log.info({ reqId: `req-${i}`, method: 'POST', route: '/v1/asset/track', status: 200, ms: 1.23 }, 'request')
  await flush()
  t.equal(lines(file).length, 1_500)
  t.ok(writes <= 6, `${writes} writes for 1,500 lines`)
})
