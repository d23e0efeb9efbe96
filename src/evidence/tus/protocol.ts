import { GatewayError } from '../../errors.js'

/** The tus version served, and the extensions (https://tus.io/protocols/resumable-upload). */
export const TUS_VERSION = '1.0.0'
export const TUS_EXTENSIONS = 'creation,creation-with-upload,termination,expiration,checksum'
export const CHECKSUM_ALGORITHMS = ['sha256', 'sha1'] as const
export type ChecksumAlgorithm = typeof CHECKSUM_ALGORITHMS[number]
export const OFFSET_CONTENT_TYPE = 'application/offset+octet-stream'
export const UPLOADS_PATH = '/v1/stream/uploads'
/** Upload ids: 128 random bits in hex. */
export const UPLOAD_ID = /^[0-9a-f]{32}$/

const invalid = (header: string, message: string): GatewayError =>
  new GatewayError('validation_error', `${header} ${message}`, { details: { [header]: message } })

/** 412 unless the request speaks the version served (every request but OPTIONS must say). */
export function checkResumable (headers: Readonly<Record<string, string>>): void {
  const given = headers['tus-resumable']
  if (given === TUS_VERSION) return
  throw new GatewayError('tus_version_unsupported', given === undefined ? 'Tus-Resumable is required' : `Tus-Resumable ${given} is not supported`, {
    details: { 'Tus-Resumable': `must be ${TUS_VERSION}` },
    headers: { 'tus-version': TUS_VERSION }
  })
}

/** A header holding a non-negative integer (Upload-Length, Upload-Offset). */
export function nonNegative (header: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  if (!/^\d{1,16}$/.test(value) || !Number.isSafeInteger(Number(value))) throw invalid(header, 'must be a non-negative integer')
  return Number(value)
}

/**
 * Upload-Metadata: comma-separated `key base64value` pairs (or a bare key).
 * Keys are unique and without spaces or commas; values must be base64.
 */
export function parseMetadata (value: string | undefined): Map<string, string> {
  const out = new Map<string, string>()
  if (value === undefined || value.trim() === '') return out
  for (const pair of value.split(',')) {
    const [key, encoded, extra] = pair.trim().split(' ')
    if (key === undefined || key === '' || extra !== undefined || out.has(key)) throw invalid('Upload-Metadata', 'must be comma-separated "key base64value" pairs, each key once')
    if (encoded !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) throw invalid('Upload-Metadata', `the value of ${key} is not base64`)
    out.set(key, encoded === undefined ? '' : Buffer.from(encoded, 'base64').toString('utf8'))
  }
  return out
}

/** Upload-Checksum: `<algorithm> <base64 digest>`, as hex. */
export function parseChecksum (value: string | undefined): { algorithm: ChecksumAlgorithm, hex: string } | undefined {
  if (value === undefined) return undefined
  const [algorithm, encoded, extra] = value.trim().split(' ')
  if (!(CHECKSUM_ALGORITHMS as readonly string[]).includes(algorithm ?? '')) throw invalid('Upload-Checksum', `the algorithm must be one of ${CHECKSUM_ALGORITHMS.join(', ')}`)
  const length = algorithm === 'sha256' ? 32 : 20
  const digest = Buffer.from(encoded ?? '', 'base64')
  if (extra !== undefined || encoded === undefined || !/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || digest.length !== length) throw invalid('Upload-Checksum', `must be "${algorithm} <base64 of the ${length}-byte digest>"`)
  return { algorithm: algorithm as ChecksumAlgorithm, hex: digest.toString('hex') }
}

/** The media type of a PATCH body, which tus fixes. */
export function checkOffsetContentType (value: string | undefined): void {
  if (value?.split(';')[0]?.trim().toLowerCase() === OFFSET_CONTENT_TYPE) return
  throw new GatewayError('unsupported_media_type', `Content-Type must be ${OFFSET_CONTENT_TYPE}`, { details: { 'Content-Type': `must be ${OFFSET_CONTENT_TYPE}` } })
}

/** The id in an upload's URL (absolute, or a path), or undefined when it names none of this service's. */
export function uploadIdOf (url: string): string | undefined {
  let path: string
  try {
    path = new URL(url, 'http://upload.invalid').pathname
  } catch {
    return undefined
  }
  const prefix = `${UPLOADS_PATH}/`
  if (!path.startsWith(prefix)) return undefined
  const id = path.slice(prefix.length)
  return UPLOAD_ID.test(id) ? id : undefined
}

/** Upload-Expires: an RFC 9110 date. */
export function httpDate (ms: number): string {
  return new Date(ms).toUTCString()
}
