import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import { CLIENT_CACHE_MS, SharedClientStore } from '../../src/auth/index.js'
import type { SharedDocuments } from '../../src/cluster/documents.js'

t.test('a shared client is looked up again after CLIENT_CACHE_MS, however the wall clock is stepped meanwhile', async t => {
  const clock = FakeTimers.install({ toFake: ['Date', 'performance'], now: Date.now() })
  t.teardown(() => clock.uninstall())
  let reads = 0
  let client: object | undefined = { client_id: 'cam-1', client_secret_hash: 'x', audiences: [], scopes: [] }
  const documents = { get: async () => { reads++; return client === undefined ? undefined : { value: client } } } as unknown as SharedDocuments
  const store = new SharedClientStore(documents)
  t.ok(await store.get('cam-1'))
  t.ok(await store.get('cam-1'))
  t.equal(reads, 1, 'the second lookup is from the cache')
  client = undefined
  clock.setSystemTime(Date.now() - 3_600_000)
  clock.tick(CLIENT_CACHE_MS)
  t.equal(await store.get('cam-1'), undefined, 'removed elsewhere: seen once the cache time has passed')
  t.equal(reads, 2)
})
