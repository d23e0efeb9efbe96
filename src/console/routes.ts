import { readdirSync, readFileSync } from 'node:fs'
import type { Route } from '../http/index.js'
import { refusal } from '../errors.js'
import { consolePage } from './page.js'
import { CONSOLE_CSS } from './style.js'

/**
 * Where `npm run build` puts the browser modules (`src/console/web`, built
 * by their own tsconfig). src/console and dist/console are both two levels
 * below the package root, so this finds them from either.
 */
const BUILT = new URL('../../dist/console-web/', import.meta.url)

/** Served on every console answer: the page loads only its own files, and nothing may frame it. */
const HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer'
}

interface Asset { body: Buffer, type: string }

/** The counters the ingest panel draws (web/ingest.ts), all /console/metrics serves. */
const INGEST_COUNTERS = ['gateway_telemetry_records_total', 'gateway_evidence_uploads_total', 'gateway_evidence_media_bytes_total']

/** The lines of a Prometheus text exposition that belong to `names` (comments included). */
export function familiesOf (text: string, names: readonly string[]): string {
  return text.split('\n').filter(line => {
    const name = line.startsWith('# ') ? line.split(' ')[2] : /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0]
    return name !== undefined && names.includes(name)
  }).join('\n') + '\n'
}

/** The built modules and the style sheet, read once at start. */
function loadAssets (): Map<string, Asset> {
  const assets = new Map<string, Asset>([['console.css', { body: Buffer.from(CONSOLE_CSS), type: 'text/css; charset=utf-8' }]])
  let names: string[]
  try {
    names = readdirSync(BUILT)
  } catch {
    throw new Error(`the console's browser modules are not built (${BUILT.pathname}): run npm run build`)
  }
  for (const name of names.filter(n => n.endsWith('.js'))) {
    assets.set(name, { body: readFileSync(new URL(name, BUILT)), type: 'text/javascript; charset=utf-8' })
  }
  return assets
}

/**
 * The operator console, on the harness port: `/console` (the run list),
 * `/console/runs/{id}` (a run), their files under `/console/assets/`, and
 * `/console/metrics`, the ingest panel's counters out of `metrics` (the
 * process's exposition): a process serves /metrics on one port only, so that
 * Prometheus counts each series once, and that is PORT when it has one.
 * The pages hold no data (the browser asks the API for it, with the token
 * the operator gives), so they are served to anyone, as the front door serves
 * them before any token (docs/console.md). Asset URLs in a page are relative,
 * so the same page works under the front door's prefix.
 */
export function consoleRoutes (metrics?: () => Promise<string>): Route[] {
  const assets = loadAssets()
  const html = (assetBase: string): Buffer => Buffer.from(consolePage(assetBase))
  const list = html('console/assets/')
  const run = html('../assets/')
  const page = (body: Buffer) => () => ({ status: 200, body, headers: { ...HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' } })
  const ingest: Route[] = metrics === undefined ? [] : [{
    method: 'GET',
    path: '/console/metrics',
    errors: 'harness',
    quiet: true,
    handler: async () => ({ status: 200, body: familiesOf(await metrics(), INGEST_COUNTERS), headers: { ...HEADERS, 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' } })
  }]
  return [
    ...ingest,
    { method: 'GET', path: '/console', errors: 'harness', handler: page(list) },
    { method: 'GET', path: '/console/runs/{id}', errors: 'harness', handler: page(run) },
    {
      method: 'GET',
      path: '/console/assets/{file}',
      errors: 'harness',
      quiet: true,
      handler: ctx => {
        const asset = assets.get(ctx.params['file']!)
        if (asset === undefined) throw refusal('asset_not_found')
        return { status: 200, body: asset.body, headers: { ...HEADERS, 'content-type': asset.type, 'cache-control': 'no-cache' } }
      }
    }
  ]
}
