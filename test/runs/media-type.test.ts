import t from 'tap'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { tailBus } from '../helpers/child.js'

/**
 * A run body is read only as JSON, and only when its sender says it is
 * JSON: `text/plain` (what fetch sends for a string), a form, or no
 * Content-Type is 415 `unsupported_media_type` with `Accept-Post`, as on
 * login (issue 12, point 17); no run
 * is started for it.
 */
const BODY = '{"message":"hi","mode":"echo"}'
const REFUSED = { status: 415, body: { detail: 'unsupported_media_type: Content-Type must be application/json' }, acceptPost: 'application/json' }

t.test('POST /runs and /runs:start refuse a body that is not declared JSON', async t => {
  const gw = await startTestGateway(t)
  const post = async (path: string, contentType: string | undefined): Promise<{ status: number, body: unknown, acceptPost: string | null }> => {
    const res = await fetch(`${gw.harnessUrl}${path}`, { method: 'POST', body: Buffer.from(BODY), ...(contentType === undefined ? {} : { headers: { 'content-type': contentType } }) })
    return { status: res.status, body: await res.json(), acceptPost: res.headers.get('accept-post') }
  }
  for (const path of ['/runs', '/runs:start']) {
    for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'application/json-seq', '', undefined]) {
      t.same(await post(path, type), REFUSED, `${path} with ${type === undefined ? 'no Content-Type' : JSON.stringify(type)}`)
    }
  }
  t.same(await tailBus(gw.dataDir, 'harness.runs.v1'), [], 'no run started for a refused body')
  for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON']) {
    t.equal((await post('/runs:start', type)).status, 202, `${type} is JSON`)
  }
})
