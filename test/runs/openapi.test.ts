import t from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { EVENT_TYPES } from '../../src/runs/index.js'

t.test('/openapi.json describes the harness routes, and what they answer matches it', async t => {
  const { url, harnessUrl } = await startTestGateway(t)
  const doc = await (await fetch(`${harnessUrl}/openapi.json`)).json() as any
  for (const path of ['/runs', '/runs:watch', '/runs:start', '/runs/{id}', '/runs/{id}/stream', '/runs/{id}/cancel', '/skills']) t.ok(doc.paths[path], `${path} is described`)
  t.same(doc.components.schemas.RunEvent.properties.type.enum, EVENT_TYPES, 'the event types are the catalogue')
  t.same(Object.keys(doc.paths).filter(p => !p.startsWith('/health') && p !== '/openapi.json').sort(), ['/runs', '/runs/{id}', '/runs/{id}/cancel', '/runs/{id}/stream', '/runs:start', '/runs:watch', '/skills'], 'the harness port serves its own routes')
  t.ok(doc.paths['/runs'].get && doc.paths['/runs'].post, 'the list and the start of a run')
  const main = await (await fetch(`${url}/openapi.json`)).json() as any
  t.notOk(main.paths['/runs'], 'PORT describes its own routes')
  t.ok(main.paths['/api/v1/orgs/{slug}/harness/runs'].get, 'among them the front door\'s, which are the harness\'s')

  const ajv = new Ajv2020({ strict: false, validateFormats: false })
  ajv.addSchema({ $id: 'doc', components: doc.components })
  const record = ajv.compile({ $ref: 'doc#/components/schemas/RunRecord' })
  const body = await (await fetch(`${harnessUrl}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'x', mode: 'echo', options: { steps: 2 }, conversation_id: 'c' }) })).json()
  t.ok(record(body), `a record as the schema says: ${ajv.errorsText(record.errors)}`)
  const pageSchema = JSON.stringify(doc.paths['/runs'].get.responses[200].content['application/json'].schema).replaceAll('"#/components/', '"doc#/components/')
  const page = ajv.compile(JSON.parse(pageSchema))
  const listed = await (await fetch(`${harnessUrl}/runs`)).json()
  t.ok(page(listed), `a page as the schema says: ${ajv.errorsText(page.errors)}`)
  t.equal((listed as any).runs.length, 1)
  t.equal((body as any).events.length, 5)
})
