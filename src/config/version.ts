import { readFileSync } from 'node:fs'

/** The package's version, read once from its package.json (src/config and dist/config are both two levels below it). */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
