// The bench's client of the gateway: one clients-file entry, and a login that returns its token.

export const AUDIENCE = 'evidence-gateway'
export const CLIENT = { client_id: 'bench', client_secret: 'bench-secret', audiences: [AUDIENCE], scopes: ['asset:track:write', 'stream:write'] }

export async function login (server) {
  const res = await fetch(new URL('/api/v1/login', server.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: CLIENT.client_id, client_secret: CLIENT.client_secret, audience: AUDIENCE }),
    signal: AbortSignal.timeout(10000)
  })
  const text = await res.text()
  let token
  try { token = JSON.parse(text).access_token } catch {}
  if (res.status !== 200 || typeof token !== 'string') throw new Error(`login answered ${res.status}: ${text.slice(0, 300)}`)
  return token
}
