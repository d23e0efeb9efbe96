import { readdirSync, readFileSync } from 'node:fs'
import type { Route } from '../http/index.js'
import { GatewayError } from '../errors.js'
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
 * `/console/runs/{id}` (a run), and their files under `/console/assets/`.
 * The pages hold no data (the browser asks the API for it, with the token
 * the operator gives), so they are served to anyone, as the front door serves
 * them before any token (docs/console.md). Asset URLs in a page are relative,
 * so the same page works under the front door's prefix.
 */
export function consoleRoutes (): Route[] {
  const assets = loadAssets()
  const html = (assetBase: string): Buffer => Buffer.from(consolePage(assetBase))
  const list = html('console/assets/')
  const run = html('../assets/')
  const page = (body: Buffer) => () => ({ status: 200, body, headers: { ...HEADERS, 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' } })
  return [
    { method: 'GET', path: '/console', errors: 'harness', handler: page(list) },
    { method: 'GET', path: '/console/runs/{id}', errors: 'harness', handler: page(run) },
    {
      method: 'GET',
      path: '/console/assets/{file}',
      errors: 'harness',
      quiet: true,
      handler: ctx => {
        const asset = assets.get(ctx.params['file']!)
        if (asset === undefined) throw new GatewayError('not_found', 'asset_not_found')
        return { status: 200, body: asset.body, headers: { ...HEADERS, 'content-type': asset.type, 'cache-control': 'no-cache' } }
      }
    }
  ]
}
