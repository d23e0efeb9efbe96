import type { BusMessage } from '../bus/index.js'
import type { EventEnvelope, MediaHint } from './envelope.js'

export const MEDIA_TYPES: Readonly<Record<string, string>> = { 'video/mp4': 'mp4', 'video/h264': 'h264' }
export const EVIDENCE_SCHEMA_HEADER = 'event-envelope@1.0'

export interface StoredMedia {
  index: number
  contentType: string
  size: number
  sha256: string
  uri: string
  etag: string
  key: string
}

export interface PublishContext {
  /** The token's client_id, or the override publishingClientId allowed. */
  clientId: string
  /** The `iss` of the uploader's token: with client_id, who the tenant is. */
  issuer: string
  /** The uploader's tenant key: with the event_id, the idempotency key, sent as `message-id`. */
  tenant: string
  requestId: string
  receivedAt: Date
  playbackBaseUrl?: string | undefined
}

/**
 * Object key `{tenant}/{yyyy}/{mm}/{dd}/{event_id}/{index}.{ext}`, dated by
 * the time of receipt (the server's clock, not the device's). The tenant is
 * always the uploader's token's tenant key (the client_id for this service's
 * own tokens): a subject.client_id override never chooses the prefix. In a
 * cluster, where two attempts at one event may overlap, each writes under
 * its own `{attempt}/` folder after the event_id, and the published envelope
 * names the objects of the attempt that was accepted.
 */
export function objectKey (tenant: string, eventId: string, index: number, contentType: string, receivedAt: Date, attempt?: string): string {
  return `${objectFolder(tenant, eventId, receivedAt, attempt)}${index}.${MEDIA_TYPES[contentType]}`
}

/** The folder (ending in `/`) the objects of an event, or of one attempt at it, go in. */
export function objectFolder (tenant: string, eventId: string, receivedAt: Date, attempt?: string): string {
  const yyyy = receivedAt.getUTCFullYear()
  const mm = String(receivedAt.getUTCMonth() + 1).padStart(2, '0')
  const dd = String(receivedAt.getUTCDate()).padStart(2, '0')
  return `${tenant}/${yyyy}/${mm}/${dd}/${eventId}/${attempt === undefined ? '' : `${attempt}/`}`
}

/** The envelope put on the bus: the received one plus what the server computed; never the bytes. */
export function publishedMessage (envelope: EventEnvelope, media: StoredMedia[], ctx: PublishContext): BusMessage {
  const hints: MediaHint[] = envelope.media ?? []
  const clientId = ctx.clientId
  const value = {
    ...envelope,
    client_id: clientId,
    issuer: ctx.issuer,
    received_at: ctx.receivedAt.toISOString(),
    request_id: ctx.requestId,
    media: media.map(m => {
      const hint = hints[m.index] ?? {}
      return {
        index: m.index,
        ref: hint.ref,
        content_type: m.contentType,
        size_bytes: m.size,
        sha256: m.sha256,
        duration_seconds: hint.duration_seconds,
        source: hint.source ?? 'device',
        uri: m.uri,
        etag: m.etag || `"${m.sha256}"`,
        ...(ctx.playbackBaseUrl ? { playback_url: `${ctx.playbackBaseUrl.replace(/\/$/, '')}/${m.key}` } : {})
      }
    })
  }
  return {
    key: `${clientId}/${envelope.subject.device_id}`,
    value: JSON.stringify(value),
    // message-id: the idempotency key, the same on every copy a crash may publish (docs/evidence.md).
    headers: { 'x-request-id': ctx.requestId, 'client-id': clientId, schema: EVIDENCE_SCHEMA_HEADER, 'message-id': `${ctx.tenant}/${envelope.event_id}` }
  }
}
