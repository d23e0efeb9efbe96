import t from 'tap'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { render } from './support/json.js'
import { describeFigures, failures, measure, trickle } from './support/storm.js'
import { DEVICE, INGEST_AUDIENCE, startTarget } from './support/target.js'

/**
 * Row 1 of issue 38: tokenless connections that declare a large body, send
 * `{` and then a byte every 3 s, on every route that takes one (the front
 * door's, matched and unmatched, telemetry, login). Before the fix the front
 * door reserved each whole Content-Length from HTTP_BODY_BUFFER_BYTES before
 * it looked at the token, and 66 of them answered every honest telemetry
 * request and login 503. Now nothing unvouched touches that budget, and a
 * body below HTTP_BODY_MIN_BYTES_PER_S is answered 408 and closed.
 */
/** 66 on the front door (past HTTP_BODY_BUFFER_BYTES at 1 MiB each, as in the report), 14 on telemetry and login. */
const FRONT_DOOR_ATTACKERS = 66
const OTHER_ATTACKERS = 14
const ATTACK_MS = 14_000
const TRICKLE_MS = 3_000
const DECLARED = 1024 * 1024

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))

t.test('tokenless trickling bodies on every route: honest telemetry, logins and front-door runs are served throughout', async t => {
  const target = await startTarget(t)
  const frontDoor = ['/api/v1/orgs/acme/harness/runs:start', '/api/v1/orgs/acme/harness/no/such/route', '/api/v1/orgs/nobody/harness/runs']
  const head = (path: string, length: number): string => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{`
  const attack = trickle(target.port, FRONT_DOOR_ATTACKERS + OTHER_ATTACKERS, i => i < FRONT_DOOR_ATTACKERS
    ? head(frontDoor[i % frontDoor.length]!, DECLARED)
    : i % 2 === 0 ? head('/v1/asset/track', DECLARED) : head('/api/v1/login', 16000), TRICKLE_MS)
  t.teardown(() => attack.stop())
  // Let every attacker be holding its connection before the honest clients start.
  await new Promise(resolve => setTimeout(resolve, 500))
  const over = new Promise(resolve => setTimeout(resolve, ATTACK_MS))
  const figures = await measure([
    { name: 'asset track', port: target.port, request: () => ({ method: 'POST', target: '/v1/asset/track', headers: [['Authorization', `Bearer ${target.device}`], ['Content-Type', 'application/json'], ['X-Request-Id', `budget-${randomUUID()}`], ['X-Request-Timestamp', '1732262400']], body: render(example) }) },
    { name: 'login', port: target.port, request: () => ({ method: 'POST', target: '/api/v1/login', headers: [['Content-Type', 'application/json']], body: JSON.stringify({ grant_type: 'client_credentials', client_id: DEVICE.client_id, client_secret: DEVICE.client_secret, audience: INGEST_AUDIENCE }) }) },
    { name: 'front door POST /runs:start', port: target.port, request: () => ({ method: 'POST', target: '/api/v1/orgs/acme/harness/runs:start', headers: [['Authorization', `Bearer ${target.user}`], ['Content-Type', 'application/json']], body: '{"message":"hi","mode":"echo"}' }) }
  ], over, 200)
  attack.stop()
  for (const f of figures) t.comment(`honest during the attack: ${describeFigures(f)}`)
  t.comment(`attackers: ${attack.opened} connections opened; answered ${JSON.stringify(attack.answers)}; ${attack.silentCloses} closed without an answer`)
  const [track, login, runs] = figures as [typeof figures[0], typeof figures[0], typeof figures[0]]
  t.same(failures(track, [200]), {}, 'every honest telemetry request answered 200')
  t.same(failures(login, [200]), {}, 'every honest login answered 200')
  t.same(failures(runs, [202]), {}, 'every honest front-door run started (202)')
  t.ok(attack.answers['408'] !== undefined && attack.answers['408'] > 0, 'trickling bodies the gateway read were answered 408 request_timeout')
  t.equal(attack.silentCloses, 0, 'no attacker connection was closed without an answer: each heard 401, 404 or 408')
  t.same(Object.keys(attack.answers).filter(s => !['401', '404', '405', '408'].includes(s)), [], 'and nothing else (no 5xx)')
  t.equal(await target.alive(), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
})
