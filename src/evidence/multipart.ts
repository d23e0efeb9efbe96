import type { Readable } from 'node:stream'
import { Busboy } from '@fastify/busboy'
import { GatewayError } from '../http/index.js'

export interface Part {
  index: number
  name: string
  contentType: string
  stream: Readable
}

/**
 * The parts of a multipart/form-data body, one at a time, each as a stream.
 * busboy produces the next part only once the current one is consumed, so
 * backpressure runs from the consumer through busboy to the socket. Every
 * part is treated as a file (streamed), whether or not it has a filename.
 */
export async function * multipartParts (body: Readable, contentType: string, maxParts: number): AsyncGenerator<Part> {
  if (body.errored) throw body.errored
  let parser: InstanceType<typeof Busboy>
  try {
    parser = new Busboy({ headers: { 'content-type': contentType }, isPartAFile: () => true, limits: { parts: maxParts, headerPairs: 100 } })
  } catch {
    throw new GatewayError('validation_error', 'not a multipart/form-data body', { details: { contentType: 'must be multipart/form-data with a boundary' } })
  }
  const queue: Part[] = []
  let finished = false
  let failure: Error | undefined
  let wake: (() => void) | undefined
  const notify = (): void => { wake?.() }
  let index = 0
  parser.on('file', (name: string, stream: Readable, _filename: string, _encoding: string, type: string) => {
    queue.push({ index: index++, name, contentType: type, stream })
    notify()
  })
  parser.on('partsLimit', () => {
    failure ??= new GatewayError('validation_error', 'too many parts', { details: { media: `at most ${maxParts - 1} media parts` } })
    notify()
  })
  parser.on('finish', () => { finished = true; notify() })
  parser.on('error', (err: Error) => {
    failure ??= new GatewayError('validation_error', 'malformed multipart body', { details: { body: err.message } })
    notify()
  })
  body.on('error', err => { failure = err; notify() })
  body.pipe(parser)
  try {
    while (true) {
      if (failure) throw failure
      const next = queue.shift()
      if (next) {
        yield next
        continue
      }
      if (finished) return
      await new Promise<void>(resolve => { wake = resolve })
      wake = undefined
    }
  } finally {
    body.unpipe(parser)
    for (const p of queue) p.stream.resume()
  }
}

/** Reads a small part whole, refusing more than `limit` bytes. */
export async function readSmallPart (stream: Readable, limit: number, key: string): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of stream) {
    size += (chunk as Buffer).length
    if (size > limit) throw new GatewayError('validation_error', `${key} part too large`, { details: { [key]: `must not exceed ${limit} bytes` } })
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}
