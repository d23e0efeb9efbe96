// Logging in as the spec says (POST /api/v1/login, client credentials), and
// the bench's own client: one clients-file entry for the gateways it starts.

export const AUDIENCE = 'evidence-gateway'
export const CLIENT = { client_id: 'bench', client_secret: 'bench-secret', audiences: [AUDIENCE], scopes: ['asset:track:write', 'stream:write'] }

/** The access token of `client` for `audience` from the login host at `baseUrl`; throws with the answer otherwise. */
export async function login (baseUrl, client = CLIENT, audience = AUDIENCE, timeoutMs = 10000) {
  const res = await fetch(`${baseUrl}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, audience }),
    signal: AbortSignal.timeout(timeoutMs)
  })
  const text = await res.text()
  let token
  try { token = JSON.parse(text).access_token } catch {}
  if (res.status !== 200 || typeof token !== 'string') throw new Error(`login answered ${res.status}: ${text.slice(0, 300)}`)
  return token
}
