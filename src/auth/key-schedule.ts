import type { ListedKey } from './key-vault.js'

/**
 * When keys are published, sign and leave, as pure functions of a vault's
 * listing and the vault's clock: every process that reads the same listing
 * decides the same, whatever its own clock says.
 *
 * Key n+1 is published when key n is `rotationMs` old, and signs from
 * `leadMs` after it was published, so every verifier that caches the key set
 * for less than `leadMs` holds it before a token of it reaches them. The
 * first key signs at once (no key set anywhere can hold an older one). Key n
 * is removed once key n+1 has signed for `retainMs`: by then every token key
 * n signed has expired.
 */
export interface KeySchedule {
  leadMs: number
  rotationMs: number
  retainMs: number
}

/** The key that signs at `now`: the newest whose lead has passed, or the oldest. Undefined when there is none. */
export function signingKey (keys: readonly ListedKey[], now: number, leadMs: number): ListedKey | undefined {
  for (let i = keys.length - 1; i > 0; i--) if (now - keys[i]!.published_at >= leadMs) return keys[i]
  return keys[0]
}

/** Whether the next key is to be published: there is none, or the newest is `rotationMs` old. */
export function rotationDue (keys: readonly ListedKey[], now: number, schedule: KeySchedule): boolean {
  const newest = keys.at(-1)
  return newest === undefined || now - newest.published_at >= schedule.rotationMs
}

/** The keys whose successor has signed for `retainMs`: no token of theirs is valid any more. */
export function expiredKeys (keys: readonly ListedKey[], now: number, schedule: KeySchedule): ListedKey[] {
  return keys.filter((_, i) => {
    const successor = keys[i + 1]
    return successor !== undefined && now - (successor.published_at + schedule.leadMs) >= schedule.retainMs
  })
}
