import { createHash } from 'node:crypto'

/**
 * Separates a client_id from its issuer's tag in a tenant key. It is outside
 * the storage-identifier grammar, so no client_id of any issuer can spell
 * another issuer's key (docs/identifiers.md).
 */
export const ISSUER_SEPARATOR = '~'

/**
 * A short, stable name for an issuer: the first 12 hex digits of the SHA-256
 * of its `iss`. The same issuer string always gets the same tag (across
 * restarts and nodes); a different string never shares its namespace, even
 * after an operator changes IDP_ISSUER.
 */
export function issuerTag (issuer: string): string {
  return createHash('sha256').update(issuer).digest('hex').slice(0, 12)
}

/**
 * The tenant of a verified token: (issuer, client_id) as one string, used as
 * the object-key prefix and the idempotency namespace. This service's own
 * tokens keep the bare client_id (so keys stay those the spec shows); any
 * other issuer's get `client_id~<tag of the issuer>`, so a token of the IdP
 * naming client `cB` never reaches the local client cB's objects or event_ids.
 * `clientId` must already be a storage identifier.
 */
export function tenantKey (clientId: string, issuer: string, localIssuer: string): string {
  return issuer === localIssuer ? clientId : `${clientId}${ISSUER_SEPARATOR}${issuerTag(issuer)}`
}
