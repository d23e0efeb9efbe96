/**
 * The identifier grammars (docs/identifiers.md). Every value an attacker can
 * choose that ends up in a storage key, a file path or a URL path passes one
 * of these before anything is stored, published or forwarded.
 */

/** Longest storage identifier, in characters (all ASCII, so also bytes). */
export const STORAGE_ID_MAX = 128

/**
 * A storage identifier: client_id, tenant, event_id, run id. ASCII letters
 * and digits first, then letters, digits and `. _ : @ -`, 1 to 128 in all.
 * No `/` or `\` (a path separator on some backend), no leading `.` (so never
 * `.` or `..`), no space, control or non-ASCII character, and no `~`, which
 * is kept free to separate an issuer's namespace from a client_id.
 */
export const STORAGE_ID = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/
export const STORAGE_ID_PATTERN = STORAGE_ID.source

export function isStorageId (value: unknown): value is string {
  return typeof value === 'string' && STORAGE_ID.test(value)
}

/** What STORAGE_ID asks, as an error message says it. */
export const STORAGE_ID_RULE = 'must be 1 to 128 ASCII letters, digits, ".", "_", ":", "@" or "-", starting with a letter or digit'

/** Longest label, in UTF-16 code units. */
export const LABEL_MAX = 256

// C0 and C1 controls and DEL.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

/**
 * A label: an identifier that only becomes a bus key or a header value
 * (asset_id, device_id). Any Unicode text, 1 to 256 code units, well formed
 * (no lone surrogate, which has no UTF-8 encoding) and without control
 * characters (a NUL or a newline in a header or a log line is an injection).
 */
export function isLabel (value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= LABEL_MAX && value.isWellFormed() && !CONTROL.test(value)
}

/** Why `value` is not a label, or undefined when it is one. */
export function labelProblem (value: string): string | undefined {
  if (value.length === 0) return 'must not be empty'
  if (value.length > LABEL_MAX) return `must be at most ${LABEL_MAX} characters`
  if (!value.isWellFormed()) return 'must be well-formed Unicode (no lone surrogates)'
  if (CONTROL.test(value)) return 'must not contain control characters'
  return undefined
}

/** An `X-Request-Id` the service accepts and echoes: 1 to 200 visible ASCII characters. */
export const REQUEST_ID = /^[\x21-\x7e]{1,200}$/
