import t from 'tap'
import pino from 'pino'
import { accessLog } from '../../src/http/access-log.js'

function capture (level: string) {
  const lines: string[] = []
  const root = pino({ level, base: { pid: 7 }, timestamp: () => ',"time":"2026-11-24T10:00:00.000Z"' }, { write: (line: string) => { lines.push(line) } })
  return { log: root.child({ server: 'gateway' }), lines }
}

t.test('the line is the one pino writes for the same fields, bindings, time and level', async t => {
  const { log, lines } = capture('debug')
  const access = accessLog(log)
  const cases: Array<[string, string, string, number, number, boolean]> = [
    ['0195c3c2-7d0a-7b3e-9f51-6c2d8e4f1a2b', 'POST', '/v1/asset/track', 200, 1.23, false],
    ['trace-42', 'GET', '/health/ready', 204, 0, true],
    ['id"with\\quote', 'POST', '/runs/:id/cancel', 499, 12345.67, false],
    ['x', 'GET', 'unmatched', 404, 0.01, false]
  ]
  for (const [reqId, method, route, status, ms, quiet] of cases) {
    access(reqId, method, route, status, ms, quiet)
    const ours = lines.pop()!
    if (quiet) log.debug({ reqId, method, route, status, ms }, 'request')
    else log.info({ reqId, method, route, status, ms }, 'request')
    const theirs = lines.pop()!
    t.equal(ours, theirs, `${method} ${route} ${status}`)
  }
})

t.test('a string JSON must escape is escaped: the line stays one JSON object', async t => {
  const { log, lines } = capture('info')
  accessLog(log)('a\nb\u0001"\\ é \ud800', 'POST', '/r/\u2028', 200, 1, false)
  t.equal(lines.length, 1)
  t.equal(lines[0]!.split('\n').length, 2, 'one line')
  t.match(JSON.parse(lines[0]!), { reqId: 'a\nb\u0001"\\ é \ud800', route: '/r/\u2028', server: 'gateway', pid: 7, level: 30, msg: 'request' })
})

t.test('the level is the logger\'s at each line: quiet routes at debug, and a level changed later holds', async t => {
  const { log, lines } = capture('info')
  const access = accessLog(log)
  access('r1', 'GET', '/health', 200, 0.1, true)
  t.equal(lines.length, 0, 'a quiet route is not logged at info')
  access('r2', 'GET', '/x', 200, 0.1, false)
  t.equal(lines.length, 1)
  log.level = 'warn'
  access('r3', 'GET', '/x', 200, 0.1, false)
  t.equal(lines.length, 1, 'nothing at warn')
  log.level = 'debug'
  access('r4', 'GET', '/health', 200, 0.1, true)
  t.equal(JSON.parse(lines.at(-1)!).level, 20, 'the quiet line at debug once debug is on')
})
