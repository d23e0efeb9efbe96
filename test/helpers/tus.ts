import { createHash } from 'node:crypto'

export const TUS = { 'tus-resumable': '1.0.0' }

export interface TusAnswer { status: number, headers: Headers, body: any }

async function answer (res: Response): Promise<TusAnswer> {
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
}

const auth = (token: string | undefined): Record<string, string> => token === undefined ? {} : { authorization: `Bearer ${token}` }

/** `Upload-Metadata` of `filetype` (and any more pairs), as tus-js-client sends it. */
export function metadata (pairs: Record<string, string> = { filetype: 'video/mp4' }): string {
  return Object.entries(pairs).map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`).join(',')
}

/** POST /v1/stream/uploads; `body`, for creation-with-upload. */
export async function create (url: string, token: string | undefined, length: number | undefined, headers: Record<string, string> = {}, body?: Buffer): Promise<TusAnswer> {
  return answer(await fetch(`${url}/v1/stream/uploads`, {
    method: 'POST',
    headers: { ...TUS, ...auth(token), ...(length === undefined ? {} : { 'upload-length': String(length) }), 'upload-metadata': metadata(), ...(body ? { 'content-type': 'application/offset+octet-stream' } : {}), ...headers },
    ...(body ? { body } : {})
  }))
}

/** The upload's absolute URL, from a creation's Location. */
export function uploadUrl (base: string, created: TusAnswer): string {
  return new URL(created.headers.get('location')!, base).href
}

export async function patch (upload: string, token: string | undefined, offset: number, body: Buffer, headers: Record<string, string> = {}): Promise<TusAnswer> {
  return answer(await fetch(upload, {
    method: 'PATCH',
    headers: { ...TUS, ...auth(token), 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset), ...headers },
    body
  }))
}

export async function head (upload: string, token: string | undefined, headers: Record<string, string> = {}): Promise<TusAnswer> {
  return answer(await fetch(upload, { method: 'HEAD', headers: { ...TUS, ...auth(token), ...headers } }))
}

export async function terminate (upload: string, token: string | undefined): Promise<TusAnswer> {
  return answer(await fetch(upload, { method: 'DELETE', headers: { ...TUS, ...auth(token) } }))
}

/** POST /v1/stream/events with the envelope alone, as JSON. */
export async function commitEvent (url: string, token: string, envelope: object): Promise<TusAnswer> {
  return answer(await fetch(`${url}/v1/stream/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth(token) },
    body: JSON.stringify(envelope)
  }))
}

/** `Upload-Checksum` of `bytes`. */
export function checksum (bytes: Buffer, algorithm: 'sha256' | 'sha1' = 'sha256'): string {
  return `${algorithm} ${createHash(algorithm).update(bytes).digest('base64')}`
}

export const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')
