import t from 'tap'
import { coalescedMetrics, isLoopbackAddress } from '../../src/ops/index.js'

t.test('loopback peers: 127/8, ::1 in any spelling, and 127/8 mapped into IPv6; nothing else', async t => {
  for (const a of ['127.0.0.1', '127.3.4.5', '::1', '0000:0000:0000:0000:0000:0000:0000:0001', '::ffff:127.0.0.1', '0000:0000:0000:0000:0000:ffff:127.0.0.1']) t.ok(isLoopbackAddress(a), a)
  for (const a of ['10.0.0.1', '128.0.0.1', '::2', '::ffff:10.0.0.1', 'fe80::1', '', 'localhost', '127.0.0.1.evil']) t.notOk(isLoopbackAddress(a), a)
})

t.test('callers during a collection share it; the next caller after it gets a fresh one; a failure is not served again', async t => {
  let collections = 0
  let fail = false
  const source = { contentType: 'text/plain', text: async () => { collections++; await new Promise(resolve => setTimeout(resolve, 20)); if (fail) throw new Error('collect failed'); return `n ${collections}` } }
  const coalesced = coalescedMetrics(source)
  const texts = await Promise.all(Array.from({ length: 100 }, () => coalesced.text()))
  t.equal(collections, 1, '100 callers at once: one collection')
  t.same(new Set(texts), new Set(['n 1']))
  t.equal(await coalesced.text(), 'n 2', 'a caller after it: a fresh collection')
  fail = true
  await t.rejects(coalesced.text())
  fail = false
  t.equal(await coalesced.text(), 'n 4', 'collected again after a failure')
})
