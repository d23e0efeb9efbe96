import { createRequire } from 'node:module'
import type * as UWS from 'uWebSockets.js'

export class UwsFallbackError extends Error {
  readonly code = 'uws_fallback'
  constructor () {
    super('uWebSockets.js loaded its Node.js emulation instead of the native binary ' +
      `(platform ${process.platform}-${process.arch}, ABI ${process.versions.modules}); ` +
      'refusing to start: figures and limits would be wrong. Set UWS_ALLOW_FALLBACK=1 to start anyway.')
    this.name = 'UwsFallbackError'
  }
}

/**
 * The uWS package silently falls back to a slow `node:http` emulation when its
 * native binary does not load. Only the native module exports `getParts`, so
 * its absence gives the emulation away.
 */
export function loadUws (allowFallback: boolean): typeof UWS {
  const uws = createRequire(import.meta.url)('uWebSockets.js') as typeof UWS
  if (typeof uws.getParts !== 'function' && !allowFallback) throw new UwsFallbackError()
  return uws
}
