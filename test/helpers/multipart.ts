import { createHash, randomBytes } from 'node:crypto'

export interface PartSpec {
  name: string
  /** Left out: the part has no Content-Type line. */
  contentType?: string
  data: Buffer | string
  filename?: string
}

export const BOUNDARY = 'gw-test-boundary-7d1f'

export function multipartBody (parts: PartSpec[], boundary = BOUNDARY): Buffer {
  const chunks: Buffer[] = []
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`
    const type = p.contentType === undefined ? '' : `Content-Type: ${p.contentType}\r\n`
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`))
    chunks.push(Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data))
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return Buffer.concat(chunks)
}

export const envelopePart = (envelope: object): PartSpec => ({ name: 'envelope', contentType: 'application/json', data: JSON.stringify(envelope) })
export const mediaPart = (data: Buffer, contentType = 'video/mp4'): PartSpec => ({ name: 'media', contentType, data, filename: 'clip.mp4' })

export function clip (size: number): { data: Buffer, sha256: string } {
  const data = randomBytes(size)
  return { data, sha256: createHash('sha256').update(data).digest('hex') }
}

export function baseEnvelope (overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' }, ...overrides }
}

export async function postEvidence (url: string, token: string | undefined, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number, body: any, headers: Headers }> {
  const res = await fetch(`${url}/v1/stream/events`, {
    method: 'POST',
    headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers }
}
