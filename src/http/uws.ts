import { createRequire } from 'node:module'
import type * as UWS from 'uWebSockets.js'

export type Uws = typeof UWS

/** One uWS package: its native binary for this runtime, loaded or refused as a whole. */
export interface UwsBuild {
  readonly name: string
  /** The native module; throws when the build has no binary that loads here. */
  load(): Uws
}

/** What decides whether a native build loads: the Node ABI, the platform and the C library. */
export interface Runtime {
  readonly node: string
  readonly abi: string
  readonly platform: string
  /** The running glibc's version; undefined off glibc (macOS, musl). */
  readonly glibc: string | undefined
}

export interface LoadedUws {
  readonly uws: Uws
  /** The build that loaded, or `emulation`. */
  readonly build: string
}

export class UwsUnavailableError extends Error {
  readonly code = 'uws_unavailable'
  constructor (runtime: Runtime, failures: ReadonlyArray<{ build: string, reason: string }>) {
    super(`no native uWebSockets.js build loads on ${describeRuntime(runtime)}: ` +
      failures.map(f => `${f.build}: ${f.reason}`).join('; ') + '. ' +
      'Supported: Node 24 or 22 on glibc 2.38 or later (Debian 13, Ubuntu 24.04), or Node 20 on older glibc. ' +
      'Refusing to start on the slow Node.js emulation: figures and limits would be wrong. Set UWS_ALLOW_FALLBACK=1 to start anyway.')
    this.name = 'UwsUnavailableError'
  }
}

export function describeRuntime (r: Runtime): string {
  return `Node ${r.node} (ABI ${r.abi}, ${r.platform}, ${r.glibc === undefined ? 'no glibc' : `glibc ${r.glibc}`})`
}

const require = createRequire(import.meta.url)
const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`

/**
 * Newest first. 20.57 has binaries for Node 20, 22, 24 and 25, but its Linux
 * ones need glibc 2.38; 20.30 runs on older glibc, for Node 20 only. 20.30's
 * binary is required directly: its package entry falls back to its Node
 * emulation on any failure, with a warning on stderr, where this loader
 * wants the failure itself.
 */
export const UWS_BUILDS: readonly UwsBuild[] = [
  { name: '@btc-vision/uwebsockets.js 20.57.0', load: () => require('uWebSockets.js') as Uws },
  { name: '@trufflesuite/uws-js-unofficial 20.30.0-unofficial.0', load: () => require(`uws-node20/binaries/${binary}`) as Uws }
]

/** 20.30's `node:http` emulation: only with UWS_ALLOW_FALLBACK=1, and never for figures. */
function emulation (): Uws {
  return require('uws-node20/dist/index') as Uws
}

function currentRuntime (): Runtime {
  const { header } = process.report.getReport() as { header: { glibcVersionRuntime?: string } }
  return { node: process.version, abi: process.versions.modules, platform: `${process.platform}-${process.arch}`, glibc: header.glibcVersionRuntime }
}

/** Why a build did not load: no binary for this ABI, else the dynamic linker's reason (the error's last line). */
function reason (err: unknown): string {
  const lines = (err instanceof Error ? err.message : String(err)).split('\n').map(l => l.trim()).filter(l => l !== '')
  if (lines.some(l => l.includes('Cannot find module'))) return `no binary ${binary}`
  return lines.at(-1)?.replace(/^Error: /, '') ?? 'failed to load'
}

/**
 * The first build whose native binary loads. Only the native module exports
 * `getParts`, so a build that hands back an emulation does not count. When
 * none loads, the emulation when allowed, else UwsUnavailableError naming
 * the runtime and each build's reason.
 */
export function pickUws (builds: readonly UwsBuild[], allowFallback: boolean, fallback: () => Uws = emulation, runtime: () => Runtime = currentRuntime): LoadedUws {
  const failures: Array<{ build: string, reason: string }> = []
  for (const build of builds) {
    try {
      const uws = build.load()
      if (typeof uws.getParts === 'function') return { uws, build: build.name }
      failures.push({ build: build.name, reason: 'loaded a Node.js emulation, not its native binary' })
    } catch (err) {
      failures.push({ build: build.name, reason: reason(err) })
    }
  }
  if (allowFallback) return { uws: fallback(), build: 'emulation' }
  throw new UwsUnavailableError(runtime(), failures)
}

export function loadUws (allowFallback: boolean): LoadedUws {
  return pickUws(UWS_BUILDS, allowFallback)
}
