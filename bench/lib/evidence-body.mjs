// The body of POST /v1/stream/events (spec: Event evidence): a multipart
// request with an `envelope` part (an EventEnvelope) and, when there is
// media, one `media` part (video/mp4) around its bytes.
import { randomBytes } from 'node:crypto'

/** An EventEnvelope of the allow-listed event type, with `eventId` as its idempotency key. */
export function envelope (eventId, occurredAt = '2026-11-22T08:00:00Z') {
  return { schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: eventId, occurred_at: occurredAt, subject: { device_id: 'cam-1' } }
}

/**
 * The bytes around the media: send `head`, then `mediaBytes` bytes of media
 * (a file named `filename`), then `tail`. Without a filename, no media part:
 * head and tail are the whole body. Also { contentType, length }.
 */
export function evidenceParts (env, filename, mediaBytes = 0) {
  const boundary = `----evidence-bench-${randomBytes(12).toString('hex')}`
  const envelopePart = `--${boundary}\r\n` +
    'Content-Disposition: form-data; name="envelope"\r\n' +
    'Content-Type: application/json\r\n\r\n' +
    `${JSON.stringify(env)}\r\n`
  const mediaHead = filename === undefined
    ? ''
    : `--${boundary}\r\nContent-Disposition: form-data; name="media"; filename="${filename}"\r\nContent-Type: video/mp4\r\n\r\n`
  const head = Buffer.from(envelopePart + mediaHead)
  const tail = Buffer.from(`${filename === undefined ? '' : '\r\n'}--${boundary}--\r\n`)
  const media = filename === undefined ? 0 : mediaBytes
  return { boundary, contentType: `multipart/form-data; boundary=${boundary}`, head, tail, length: head.length + media + tail.length }
}
