import t from 'tap'
import { spawnGateway } from '../helpers/child.js'

t.test('the process refuses to start on the uWS Node emulation', async t => {
  const gw = spawnGateway(t, ['start'], { DATA_DIR: t.testdir(), UWS_USE_FALLBACK: '1' })
  t.equal(await gw.exit, 1)
  t.match(gw.stderr(), /loaded its Node\.js emulation.*Set UWS_ALLOW_FALLBACK=1/s)
})

t.test('UWS_ALLOW_FALLBACK=1 starts it anyway', async t => {
  const gw = spawnGateway(t, ['start'], { DATA_DIR: t.testdir(), UWS_USE_FALLBACK: '1', UWS_ALLOW_FALLBACK: '1' })
  await gw.waitFor('gateway listening')
  gw.proc.kill('SIGTERM')
  t.equal(await gw.exit, 0)
})

t.test('a bad configuration stops start-up with a message naming the variable', async t => {
  const gw = spawnGateway(t, ['start'], { DATA_DIR: t.testdir(), TELEMETRY_LINGER_MS: 'soon' })
  t.equal(await gw.exit, 1)
  t.match(gw.stderr(), /TELEMETRY_LINGER_MS="soon": must be integer/)
})
