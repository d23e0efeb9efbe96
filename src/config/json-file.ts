import { readFileSync } from 'node:fs'
import { Ajv } from 'ajv'
import { ConfigError } from './load.js'

/**
 * Reads a JSON file that a variable names (AUTH_CLIENTS_FILE, ORGS_FILE) and
 * checks it against `schema`, failing start-up with the variable, the file
 * and the first problem named.
 */
export function readJsonFile<T> (variable: string, file: string, schema: object): T {
  const validate = new Ajv({ allErrors: true }).compile<T>(schema)
  let value: unknown
  try {
    value = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new ConfigError(`${variable} ${file}: ${(err as Error).message}`)
  }
  if (!validate(value)) {
    const e = validate.errors?.[0]
    throw new ConfigError(`${variable} ${file}: ${e?.instancePath || '/'} ${e?.message ?? 'invalid'}`)
  }
  return value
}
