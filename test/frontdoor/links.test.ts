import t from 'tap'
import { rerootLinks } from '../../src/frontdoor/links.js'

const PREFIX = '/api/v1/orgs/acme/harness'
const reroot = (answer: unknown): unknown => JSON.parse(rerootLinks(Buffer.from(JSON.stringify(answer)), PREFIX).toString())

t.test('links naming a fronted route are re-rooted under the door; others are left as they are', async t => {
  t.same(reroot({ run_id: 'run-1', status: 'queued', links: { self: '/runs/run-1', stream: '/runs/run-1/stream', cancel: '/runs/run-1/cancel' } }), {
    run_id: 'run-1',
    status: 'queued',
    links: { self: `${PREFIX}/runs/run-1`, stream: `${PREFIX}/runs/run-1/stream`, cancel: `${PREFIX}/runs/run-1/cancel` }
  })
  t.same(reroot({ links: { next: '/runs?cursor=abc' } }), { links: { next: `${PREFIX}/runs?cursor=abc` } }, 'a query stays on the link')
  t.same(reroot({ links: { console: '/console/runs/run-1' } }), { links: { console: `${PREFIX}/console/runs/run-1` } }, 'the console is fronted too (an open row)')
  const foreign = { links: { admin: '/admin/runs/run-1', docs: 'https://example.test/runs/run-1', odd: '/runs/../admin', n: 3 }, self: '/runs/run-1' }
  t.same(reroot(foreign), foreign, 'unfronted, absolute, traversing and non-string links, and fields outside links, are untouched')
})

t.test('an answer without links, or not JSON, passes byte for byte', async t => {
  for (const text of ['{"run_id":"run-1"}', '{"links":null}', '[1,2]', 'not json', '', '{"links": "/runs/run-1"}']) {
    const body = Buffer.from(text)
    t.equal(rerootLinks(body, PREFIX), body, JSON.stringify(text))
  }
})
