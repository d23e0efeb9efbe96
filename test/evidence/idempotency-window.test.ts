import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import '../helpers/no-keepalive.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence } from '../helpers/multipart.js'

// The window as the running gateway keeps it, with the configured default
// (IDEMPOTENCY_TTL_S=86400, read as seconds): only the wall clock is faked,
// timers and I/O run for real.
t.test('an event_id sent again 24 h less a second later is a replay; 24 h and a second later it is fresh', async t => {
  const T0 = Date.parse('2026-11-22T08:00:00Z')
  const clock = FakeTimers.install({ toFake: ['Date'], now: T0 })
  t.teardown(() => clock.uninstall())
  const { url, config } = await startTestGateway(t)
  t.equal(config.idempotencyTtlS, 86_400)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-window' })), mediaPart(clip(1000).data)])
  const send = async (): Promise<{ status: number, body: unknown, replay: string | null }> => {
    // A token lives minutes, not a day: each send logs in at the faked time.
    const res = await postEvidence(url, await login(url), body)
    return { status: res.status, body: res.body, replay: res.headers.get('idempotent-replay') }
  }
  const ack = { status: 'accepted', event_id: 'evt-window', media_count: 1 }

  t.strictSame(await send(), { status: 202, body: ack, replay: null }, 'accepted')
  clock.setSystemTime(T0 + 24 * 3600_000 - 1000)
  t.strictSame(await send(), { status: 202, body: ack, replay: 'true' }, 'a day less a second later: the stored answer, replayed')
  clock.setSystemTime(T0 + 24 * 3600_000 + 1000)
  t.strictSame(await send(), { status: 202, body: ack, replay: null }, 'a day and a second later: accepted afresh')
})
