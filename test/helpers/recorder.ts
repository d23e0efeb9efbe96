import { createServer, type IncomingHttpHeaders } from 'node:http'

interface Tap { teardown(fn: () => unknown): void }

export interface RecordedRequest {
  method: string
  url: string
  headers: IncomingHttpHeaders
  body: string
}

export interface Recorder {
  url: string
  port: number
  /** Every request received so far, in order of arrival. */
  requests: RecordedRequest[]
}

/**
 * An HTTP server on loopback that records every request it gets and answers
 * each with `answer` (default 200 `{}`): a stand-in harness, or a host no
 * request should ever reach.
 */
export async function startRecorder (t: Tap, answer: (req: RecordedRequest) => { status: number, body: unknown } = () => ({ status: 200, body: {} })): Promise<Recorder> {
  const requests: RecordedRequest[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const recorded = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }
      requests.push(recorded)
      const { status, body } = answer(recorded)
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' })
      res.end(JSON.stringify(body))
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => { server.closeAllConnections(); server.close(resolve) }))
  const port = (server.address() as { port: number }).port
  return { url: `http://127.0.0.1:${port}`, port, requests }
}
