/** What the passes that read a JSON body without parsing it share: its structural bytes, and how deep it may nest. */

/**
 * Nesting of a JSON body, counted in objects and arrays (`{}` is depth 1).
 * The known telemetry fields nest six deep at most; 32 leaves room for
 * unknown fields while keeping every consumer's recursive decoder (and our
 * own printer) far from its stack limit.
 */
export const JSON_MAX_DEPTH = 32

export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const COLON = 0x3a
export const COMMA = 0x2c
export const OPEN_OBJECT = 0x7b
export const CLOSE_OBJECT = 0x7d
export const OPEN_ARRAY = 0x5b
export const CLOSE_ARRAY = 0x5d
export const MINUS = 0x2d
export const PLUS = 0x2b
export const DOT = 0x2e
export const ZERO = 0x30
export const NINE = 0x39
