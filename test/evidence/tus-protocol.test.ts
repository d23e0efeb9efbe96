import t from 'tap'
import { GatewayError } from '../../src/errors.js'
import { UPLOAD_ID, checkOffsetContentType, checkResumable, nonNegative, parseChecksum, parseMetadata, uploadIdOf } from '../../src/evidence/tus/protocol.js'
import { expiryOf, uploadId } from '../../src/evidence/tus/record.js'

const details = (fn: () => unknown): unknown => {
  try {
    fn()
  } catch (err) {
    return [(err as GatewayError).status, (err as GatewayError).details]
  }
  return 'no error'
}

t.test('Tus-Resumable: only 1.0.0; otherwise 412 naming the version served', async t => {
  t.doesNotThrow(() => checkResumable({ 'tus-resumable': '1.0.0' }))
  for (const headers of [{}, { 'tus-resumable': '' }] as Array<Record<string, string>>) {
    t.same(details(() => checkResumable(headers)), [412, { 'Tus-Resumable': 'must be 1.0.0' }], JSON.stringify(headers))
  }
  for (const headers of [{ 'tus-resumable': '' }, { 'tus-resumable': '1.0' }, { 'tus-resumable': '0.2.2' }]) {
    t.same(details(() => checkResumable(headers)), [412, { 'Tus-Resumable': 'must be 1.0.0' }], JSON.stringify(headers))
  }
})

t.test('integer headers: digits only, safe integers', async t => {
  t.equal(nonNegative('Upload-Offset', undefined), undefined)
  t.equal(nonNegative('Upload-Offset', '0'), 0)
  t.equal(nonNegative('Upload-Offset', '268435456'), 268435456)
  for (const bad of ['', '-1', '+1', '1.5', '1e3', ' 1', '0x10', '99999999999999999']) {
    t.same(details(() => nonNegative('Upload-Offset', bad)), [400, { 'Upload-Offset': 'must be a non-negative integer' }], JSON.stringify(bad))
  }
})

t.test('Upload-Metadata: pairs of a key and a base64 value, or a bare key; each key once', async t => {
  const b64 = (s: string): string => Buffer.from(s).toString('base64')
  t.same([...parseMetadata(undefined)], [])
  t.same([...parseMetadata(`filetype ${b64('video/mp4')},filename ${b64('a b,c.mp4')},flag`)], [['filetype', 'video/mp4'], ['filename', 'a b,c.mp4'], ['flag', '']])
  for (const bad of [`filetype ${b64('x')},filetype ${b64('y')}`, 'a b c', 'filetype !!', ',', `filetype ${b64('x')},`]) {
    t.equal((details(() => parseMetadata(bad)) as [number])[0], 400, JSON.stringify(bad))
  }
})

t.test('Upload-Checksum: sha256 or sha1, a base64 digest of the right length', async t => {
  const sha256 = Buffer.alloc(32, 7)
  t.same(parseChecksum(`sha256 ${sha256.toString('base64')}`), { algorithm: 'sha256', hex: sha256.toString('hex') })
  t.same(parseChecksum(`sha1 ${Buffer.alloc(20, 1).toString('base64')}`), { algorithm: 'sha1', hex: Buffer.alloc(20, 1).toString('hex') })
  t.equal(parseChecksum(undefined), undefined)
  t.same(details(() => parseChecksum('md5 AAAAAAAAAAAAAAAAAAAAAA==')), [400, { 'Upload-Checksum': 'the algorithm must be one of sha256, sha1' }])
  for (const bad of ['sha256', `sha256 ${Buffer.alloc(20).toString('base64')}`, 'sha256 not-base64!', `sha256 ${sha256.toString('base64')} extra`]) {
    t.equal((details(() => parseChecksum(bad)) as [number])[0], 400, bad)
  }
})

t.test('PATCH bodies are application/offset+octet-stream, parameters and case aside', async t => {
  t.doesNotThrow(() => checkOffsetContentType('application/offset+octet-stream'))
  t.doesNotThrow(() => checkOffsetContentType('Application/Offset+Octet-Stream; charset=x'))
  for (const bad of [undefined, '', 'application/octet-stream', 'application/offset+octet-streamx']) t.equal((details(() => checkOffsetContentType(bad)) as [number])[0], 415, String(bad))
})

t.test('an upload URL: this service\'s path, absolute or not, with a 32-hex id', async t => {
  const id = '0123456789abcdef0123456789abcdef'
  t.equal(uploadIdOf(`/v1/stream/uploads/${id}`), id)
  t.equal(uploadIdOf(`https://gw.example/v1/stream/uploads/${id}`), id, 'any host: the device may reach the gateway through a proxy')
  t.equal(uploadIdOf(`http://127.0.0.1:8080/v1/stream/uploads/${id}?x=1`), id)
  for (const bad of ['', 'not a url at all', `/v1/stream/uploads/${id}/more`, `/v1/stream/uploads/${id.toUpperCase()}`, `/v1/stream/events/${id}`, `/v1/stream/uploads/../uploads/${id}x`, 'http://[::1']) {
    t.equal(uploadIdOf(bad), undefined, JSON.stringify(bad))
  }
})

t.test('an upload id carries its expiry, to the second, and 96 random bits', async t => {
  const expires = Date.UTC(2026, 11, 8, 12, 0, 0, 750)
  const id = uploadId(expires, Buffer.alloc(12, 0xab))
  t.match(id, UPLOAD_ID)
  t.equal(id.slice(8), 'ab'.repeat(12))
  t.equal(expiryOf(id), expires - 750, 'the second it expires in, never later than Upload-Expires')
})
