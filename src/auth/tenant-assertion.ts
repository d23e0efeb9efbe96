import { createHash, createHmac, timingSafeEqual } from 'node:crypto'

/**
 * The front door's word to the harness that a tenant belongs to a caller
 * (docs/frontdoor.md, "Tenant assertion"): without it, anyone who reaches
 * the harness port with a valid token can name any tenant. The assertion is
 * an HMAC-SHA256, under HARNESS_TENANT_ASSERTION_SECRET, of
 *
 *   svc-tenant-assertion.v1 LF <tenant> LF <token digest> LF <exp>
 *
 * where the token digest is base64url(SHA-256(forwarded bearer token)) and
 * exp is in Unix seconds. The header carries `v1.<exp>.<base64url(mac)>`;
 * the tenant travels in X-Svc-Tenant-Client-Id and the token in
 * Authorization, so neither is repeated.
 */

export { TENANT_ASSERTION_HEADER } from '../harness-api/index.js'

/** How long an assertion is good for: one request's worth, plus clock skew. */
export const TENANT_ASSERTION_TTL_S = 60

const FORMAT = /^v1\.([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})$/

function mac (secret: string, tenant: string, token: string, exp: number): Buffer {
  const digest = createHash('sha256').update(token).digest('base64url')
  return createHmac('sha256', secret).update(`svc-tenant-assertion.v1\n${tenant}\n${digest}\n${exp}`).digest()
}

/** The assertion that `tenant` acts through `token` for the next TENANT_ASSERTION_TTL_S seconds. */
export function signTenantAssertion (secret: string, tenant: string, token: string, now = Date.now()): string {
  const exp = Math.floor(now / 1000) + TENANT_ASSERTION_TTL_S
  return `v1.${exp}.${mac(secret, tenant, token, exp).toString('base64url')}`
}

/**
 * True when `assertion` binds `tenant` to `token` and has not expired
 * (`leewayS` of clock skew either way). An expiry further ahead than one
 * TTL is refused too: no front door issues one, so it is a forgery or a
 * broken clock.
 */
export function verifyTenantAssertion (secret: string, assertion: string | undefined, tenant: string, token: string, leewayS: number, now = Date.now()): boolean {
  const m = assertion === undefined ? null : FORMAT.exec(assertion)
  if (!m) return false
  const exp = Number(m[1])
  const nowS = now / 1000
  if (exp + leewayS < nowS || exp > nowS + TENANT_ASSERTION_TTL_S + leewayS) return false
  return timingSafeEqual(Buffer.from(m[2]!, 'base64url'), mac(secret, tenant, token, exp))
}
