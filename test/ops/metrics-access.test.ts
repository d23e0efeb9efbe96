import t from 'tap'
import { cachedMetrics, isLoopbackAddress } from '../../src/ops/index.js'

t.test('loopback peers: 127/8, ::1 in any spelling, and 127/8 mapped into IPv6; nothing else', async t => {
  for (const a of ['127.0.0.1', '127.3.4.5', '::1', '0000:0000:0000:0000:0000:0000:0000:0001', '::ffff:127.0.0.1', '0000:0000:0000:0000:0000:ffff:127.0.0.1']) t.ok(isLoopbackAddress(a), a)
  for (const a of ['10.0.0.1', '128.0.0.1', '::2', '::ffff:10.0.0.1', 'fe80::1', '', 'localhost', '127.0.0.1.evil']) t.notOk(isLoopbackAddress(a), a)
})

t.test('one collection serves every caller within its lifetime; a failed one is not served again', async t => {
  let collections = 0
  let fail = false
  const source = { contentType: 'text/plain', text: async () => { collections++; if (fail) throw new Error('collect failed'); return `n ${collections}` } }
  const cached = cachedMetrics(source, 60_000)
  const texts = await Promise.all(Array.from({ length: 100 }, () => cached.text()))
  t.equal(collections, 1)
  t.same(new Set(texts), new Set(['n 1']))
  const failing = cachedMetrics(source, 60_000)
  fail = true
  await t.rejects(failing.text())
  fail = false
  t.equal(await failing.text(), 'n 3', 'collected again after a failure')
  t.equal(await cachedMetrics(source, 0).text(), 'n 4')
})
