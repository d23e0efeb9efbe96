// Loader hooks for scripts/ts-cache.mjs. A .ts module's output is keyed by
// its path and source, and by what else decides the output (tsconfig.json,
// the TypeScript and ts-node versions), so an edit or an upgrade is a miss.
// A miss goes on to ts-node (tap's TypeScript plugin) and stores what it
// returns, inline source map included, so stack traces still name .ts lines.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = new URL('../', import.meta.url)
const dir = fileURLToPath(new URL('node_modules/.cache/ts-tests/', root))
const salt = ['tsconfig.json', 'node_modules/typescript/package.json', 'node_modules/@isaacs/ts-node-temp-fork-for-pr-2009/package.json']
  .map(file => readFileSync(new URL(file, root), 'utf8')).join('\0')
mkdirSync(dir, { recursive: true })

export async function load (url, context, next) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context)
  const key = createHash('sha256').update(salt).update('\0').update(url).update('\0').update(readFileSync(new URL(url))).digest('hex')
  const file = `${dir}${key}.mjs`
  try {
    return { format: 'module', source: readFileSync(file, 'utf8'), shortCircuit: true }
  } catch {}
  const result = await next(url, context)
  if (result.format === 'module' && result.source !== undefined) {
    // Three test files fill the cache at once: each writes whole files only.
    const partial = `${file}.${process.pid}`
    writeFileSync(partial, String(result.source))
    renameSync(partial, file)
  }
  return result
}
