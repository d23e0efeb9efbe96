import t from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { EVENT_TYPES } from '../../src/runs/index.js'

t.test('/openapi.json describes the harness routes, and what they answer matches it', async t => {
  const { url, harnessUrl } = await startTestGateway(t)
  const doc = await (await fetch(`${url}/openapi.json`)).json() as any
  for (const path of ['/runs', '/runs:start', '/runs/{id}', '/runs/{id}/stream', '/runs/{id}/cancel', '/skills']) t.ok(doc.paths[path], `${path} is described`)
  t.ok(doc.paths['/v1/asset/track'], 'beside the ingest routes')
  t.same(doc.components.schemas.RunEvent.properties.type.enum, EVENT_TYPES, 'the event types are the catalogue')
  const own = await (await fetch(`${harnessUrl}/openapi.json`)).json() as any
  t.same(Object.keys(own.paths).sort(), ['/runs', '/runs/{id}', '/runs/{id}/cancel', '/runs/{id}/stream', '/runs:start', '/skills'], 'the harness port serves its own part')

  const ajv = new Ajv2020({ strict: false, validateFormats: false })
  ajv.addSchema({ $id: 'doc', components: doc.components })
  const record = ajv.compile({ $ref: 'doc#/components/schemas/RunRecord' })
  const body = await (await fetch(`${harnessUrl}/runs`, { method: 'POST', body: JSON.stringify({ message: 'x', mode: 'echo', options: { steps: 2 }, conversation_id: 'c' }) })).json()
  t.ok(record(body), `a record as the schema says: ${ajv.errorsText(record.errors)}`)
  t.equal((body as any).events.length, 5)
})
