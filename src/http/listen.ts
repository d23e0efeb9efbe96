import { createServer } from 'node:net'

/**
 * Why `host:port` cannot be bound right now, as the kernel says it
 * (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`), or undefined when it can. The
 * bind is exclusive: a port a gateway holds with SO_REUSEPORT counts as taken.
 */
export async function bindProblem (host: string, port: number): Promise<string | undefined> {
  const server = createServer()
  return await new Promise(resolve => {
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)))
  })
}

/** The error a listener that cannot bind fails start-up with: the kernel's code, the setting and the port. */
export function listenError (code: string, setting: string, host: string, port: number): Error {
  const why = code === 'EADDRINUSE' ? ' is in use by another process (another gateway on the same port would split its connections with it)' : ''
  return Object.assign(new Error(`${code}: ${setting}=${port} on ${host}${why}`), { code })
}
