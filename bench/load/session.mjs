// The load tool's token: logged in at the start, logged in again when a
// request is answered 401 (an expired or revoked token), once for all the
// requests that saw the same token, and at most once a second.
import { login } from '../lib/login.mjs'

export function session ({ authUrl, clientId, clientSecret, audience, timeoutMs }) {
  const creds = { client_id: clientId, client_secret: clientSecret }
  let token
  let generation = 0
  let refreshing
  let lastTry = 0
  const relogins = []
  return {
    async start () {
      token = await login(authUrl, creds, audience, timeoutMs)
      generation++
    },
    /** { token, generation }, waiting for a login in progress. */
    async current () {
      if (refreshing) await refreshing
      return { token, generation }
    },
    /** A request that carried token `gen` got 401: log in again, unless another request already did. */
    refresh (gen) {
      if (gen !== generation || refreshing || Date.now() - lastTry < 1000) return
      lastTry = Date.now()
      refreshing = login(authUrl, creds, audience, timeoutMs)
        .then(t => { token = t; generation++; relogins.push({ at: new Date().toISOString(), ok: true }) },
          err => { relogins.push({ at: new Date().toISOString(), ok: false, error: err.message }) })
        .finally(() => { refreshing = undefined })
    },
    relogins: () => relogins
  }
}
