// The load tool's resumable uploads (tus, docs/evidence.md#resumable-uploads-tus):
// one "request" of the rate is a whole upload as a device on a link that
// drops sends it: a creation, a PATCH of the whole clip cut after
// `cutAfter` bytes (the connection closed under it: a forced disconnect),
// HEAD for the offset the server kept, the rest in a PATCH (423 while the
// cut PATCH still holds the upload: tried again; 409 when it recorded a part
// or the bytes it got after the HEAD: from the offset the answer gives), then the event committed
// as JSON naming the upload. Its latency is the whole of it; its status the
// commit's, or the first step that failed (`create 429`, `patch 409`...).
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

const TUS = { 'tus-resumable': '1.0.0' }
/** Tries of a PATCH answered 423 (the cut one not yet let go) before the upload counts as failed. */
const LOCKED_TRIES = 50

export function tusUploads ({ pool, origin, prefix, media, cutAfter, timeoutMs }) {
  const target = new URL(origin)

  async function call (token, method, path, headers, body) {
    const res = await pool.request({ method, path, headers: { authorization: `Bearer ${token}`, ...TUS, ...headers }, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() }
  }

  /** A PATCH of the rest from `offset` whose connection is closed after `cutAfter` bytes of body. */
  function cutPatch (token, location, offset) {
    const body = media.subarray(offset)
    return new Promise(resolve => {
      const socket = connect(Number(target.port || 80), target.hostname, () => {
        socket.write(`PATCH ${location} HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${token}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: ${offset}\r\n` +
          `Content-Type: application/offset+octet-stream\r\nContent-Length: ${body.length}\r\n\r\n`)
        socket.write(body.subarray(0, cutAfter), () => { socket.destroy(); resolve() })
      })
      socket.on('error', () => { socket.destroy(); resolve() })
    })
  }

  return {
    /** One upload; resolves to { status, ok, body }. */
    async send (token, eventId) {
      const created = await call(token, 'POST', `${prefix}/v1/stream/uploads`, { 'upload-length': String(media.length), 'upload-metadata': `filetype ${Buffer.from('video/mp4').toString('base64')}` })
      if (created.status !== 201) return { status: `create ${created.status}`, ok: false, body: created.text }
      const location = created.headers.location
      let offset = 0
      if (cutAfter > 0 && cutAfter < media.length) {
        await cutPatch(token, location, 0)
        const head = await call(token, 'HEAD', location, {})
        if (head.status !== 200) return { status: `head ${head.status}`, ok: false, body: head.text }
        offset = Number(head.headers['upload-offset'])
      }
      for (let tries = 0; offset < media.length;) {
        const res = await call(token, 'PATCH', location, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, media.subarray(offset))
        if (res.status === 423 && ++tries < LOCKED_TRIES) { await sleep(100); continue }
        // The cut PATCH recorded what it got after the HEAD: go on from where the server says.
        if (res.status === 409 && res.headers['upload-offset'] !== undefined && ++tries < LOCKED_TRIES) { offset = Number(res.headers['upload-offset']); continue }
        if (res.status !== 204) return { status: `patch ${res.status}`, ok: false, body: res.text }
        offset = Number(res.headers['upload-offset'])
      }
      const envelope = { schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: eventId, occurred_at: new Date().toISOString(), subject: { device_id: 'cam-1' }, media: [{ upload_url: location }] }
      const commit = await call(token, 'POST', `${prefix}/v1/stream/events`, { 'content-type': 'application/json' }, JSON.stringify(envelope))
      return { status: String(commit.status), ok: commit.status === 202, body: commit.text }
    }
  }
}
