const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?(?:Z|z|[+-](\d{2})(?::?(\d{2}))?)$/

/**
 * An ISO 8601 extended date-time that names its timezone: `Z` or an offset
 * (`+02`, `+0200`, `+02:00`); seconds and fractions optional. Broader than
 * RFC 3339, as devices send all of these; a timestamp without a zone is
 * ambiguous and refused. Field values are range-checked (no 2026-02-30).
 */
export function isIsoDateTimeWithZone (s: string): boolean {
  const m = ISO.exec(s)
  if (!m) return false
  const n = (i: number): number => m[i] === undefined ? 0 : Number(m[i])
  const [year, month, day, hour, minute, second] = [n(1), n(2), n(3), n(4), n(5), n(6)]
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 60 || n(7) > 23 || n(8) > 59) return false
  return day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate()
}
