// The Go peer of the telemetry scenario (bench/baselines/go-peer/): built
// with `go build` into a cache outside the repo, keyed by a hash of its
// sources, and started as a bench target with the settings a scenario gives.
//
//   import { goPeer } from '../lib/go-peer.mjs'
//   goPeer({ env: async ctx => ({ KAFKA_BROKERS, JWKS_URL, LINGER_MS: '5' }) })
//
// Its schema comes from the gateway's build (export-schema.mjs reads dist/),
// written into the scenario's temp dir at each start.
import { createHash } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { startServer, listeningLine } from './procs.mjs'
import { BENCH_DIR, REPO_DIR } from './paths.mjs'

export const GO_PEER_DIR = join(BENCH_DIR, 'baselines', 'go-peer')
const CACHE_DIR = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'evidence-gateway-bench')

/** sha256 of what goes into the binary: go.mod, go.sum and the .go files but the tests. */
export function goPeerSourcesHash () {
  const hash = createHash('sha256')
  const files = readdirSync(GO_PEER_DIR).filter(f => (f.endsWith('.go') && !f.endsWith('_test.go')) || f === 'go.mod' || f === 'go.sum').sort()
  for (const f of files) hash.update(f).update('\0').update(readFileSync(join(GO_PEER_DIR, f))).update('\0')
  return hash.digest('hex').slice(0, 16)
}

/**
 * The path of the built binary, building it first when the cache has none
 * for these sources. Modules come from the Go module proxy (GOFLAGS=-mod=mod,
 * the committed go.sum checks them). Throws with go's output when the build fails.
 */
export function buildGoPeer (log = line => process.stderr.write(line + '\n')) {
  const dir = join(CACHE_DIR, `go-peer-${goPeerSourcesHash()}`)
  const binary = join(dir, 'go-peer')
  if (existsSync(binary)) return binary
  const go = spawnSync('go', ['version'], { encoding: 'utf8' })
  if (go.status !== 0) throw new Error('the Go peer needs Go (`go` on PATH): https://go.dev/dl/')
  mkdirSync(dir, { recursive: true })
  const partial = `${binary}.${process.pid}.tmp`
  log(`bench: building the Go peer (${go.stdout.trim()}): go build -o ${binary}`)
  const r = spawnSync('go', ['build', '-trimpath', '-o', partial, '.'], {
    cwd: GO_PEER_DIR,
    env: { ...process.env, GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
    encoding: 'utf8',
    timeout: 10 * 60 * 1000
  })
  if (r.status !== 0) {
    rmSync(partial, { force: true })
    throw new Error(`go build of bench/baselines/go-peer failed (exit ${r.status ?? r.signal}):\n${r.stderr || r.stdout}`)
  }
  renameSync(partial, binary)
  return binary
}

/** Writes the gateway's schema and request-id grammar (from dist/) to `file` for SCHEMA_FILE. */
export function exportSchema (file) {
  if (!existsSync(join(REPO_DIR, 'dist', 'telemetry', 'schema.js'))) throw new Error('dist/ is missing: run `npm run build` first')
  const r = spawnSync(process.execPath, [join(GO_PEER_DIR, 'export-schema.mjs'), file], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`export-schema.mjs failed: ${r.stderr}`)
  return file
}

/**
 * The Go peer as a bench target. `env` (object, or async (ctx) → object)
 * gives at least KAFKA_BROKERS and JWKS_URL or JWT_PUBLIC_KEY_FILE; also
 * TOPIC, JWT_ISSUER, JWT_AUDIENCE, LINGER_MS, BATCH_MAX_BYTES, HTTP_SERVER
 * (fasthttp | nethttp), COMPRESSION... (see bench/baselines/go-peer/README.md).
 * Pinned to ctx.serverCpu: Go then runs with GOMAXPROCS=1.
 */
export function goPeer ({ label = 'go-peer', env: envSpec = {} } = {}) {
  return {
    label,
    kind: 'baseline',
    async start (ctx) {
      const binary = buildGoPeer(ctx.log)
      const schemaFile = exportSchema(join(ctx.tmpDir, `${label}.schema.json`))
      const env = typeof envSpec === 'function' ? await envSpec(ctx) : envSpec
      return startServer({
        label,
        cmd: binary,
        args: [],
        cwd: REPO_DIR,
        cpu: ctx.serverCpu,
        dir: ctx.tmpDir,
        env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: ctx.settings?.logLevel ?? 'info', SCHEMA_FILE: schemaFile, ...env },
        ready: listeningLine('go-peer listening'),
        timeoutMs: 60000
      })
    }
  }
}

/**
 * `go-peer count`: reads `topic` to its end and resolves to { records, bad,
 * firstBad } (bad: records without the gateway's key, headers or fields);
 * with `dump`, also `messages`: [{ partition, offset, key, headers, value }].
 */
export function countTopic ({ brokers, topic, dump = false }) {
  const r = spawnSync(buildGoPeer(), ['count'], {
    env: { ...process.env, KAFKA_BROKERS: brokers, TOPIC: topic, DUMP: dump ? '1' : '' },
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    timeout: 6 * 60 * 1000
  })
  if (r.status !== 0) throw new Error(`go-peer count ${topic} failed: ${r.stderr || r.stdout || r.error?.message}`)
  const lines = r.stdout.trim().split('\n').map(l => JSON.parse(l))
  const summary = lines.pop()
  return dump ? { ...summary, messages: lines } : summary
}
