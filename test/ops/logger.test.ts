import { closeSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { createLogger } from '../../src/ops/index.js'

const lines = (file: string): Array<Record<string, unknown>> => readFileSync(file, 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l) as Record<string, unknown>)

function logTo (t: { testdir: () => string, teardown: (fn: () => unknown) => void }): { file: string, fd: number } {
  const file = join(t.testdir(), 'log')
  const fd = openSync(file, 'w')
  t.teardown(() => closeSync(fd))
  return { file, fd }
}

t.test('a lone line is written within the flush period, without a flush call', async t => {
  const { file, fd } = logTo(t)
  const { log } = createLogger('info', fd)
  log.info({ n: 1 }, 'hello')
  let seen: Array<Record<string, unknown>> = []
  for (let waited = 0; waited < 2000 && seen.length === 0; waited += 20) {
    await sleep(20)
    seen = lines(file)
  }
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
