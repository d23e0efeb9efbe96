import t from 'tap'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'yaml'
import { defaultOf, readRepo, root, run } from './tools.js'

// The Dockerfile is not built here (no container engine): its rules are checked on its text, and the
// SBOM script it runs is run on this checkout's installed tree.
const dockerfile = readRepo('Dockerfile')
const pkg = JSON.parse(readRepo('package.json'))
const stages = dockerfile.split(/^FROM /m).slice(1)
const runtime = stages.at(-1)!

t.test('both stages on one Node 24 LTS image on Debian 13, pinned to an exact version', async t => {
  t.match(dockerfile, /^ARG NODE_IMAGE=node:24\.\d+\.\d+-trixie-slim(@sha256:[0-9a-f]{64})?$/m)
  t.same(stages.map(s => s.split('\n')[0]), ['${NODE_IMAGE} AS build', '${NODE_IMAGE}'])
})

t.test('the runtime stage: production dependencies only, code owned by root, run as a non-root uid under tini', async t => {
  t.match(stages[0], /npm ci && npm prune --omit=dev/, 'dev dependencies pruned before the copy')
  t.notMatch(runtime, /npm (ci|install)/, 'nothing installed from npm in the runtime stage')
  t.match(runtime, /^USER 1000:1000$/m, 'a numeric user, which runAsNonRoot can check')
  t.notMatch(runtime, /COPY [^\n]*--chown/, 'the code is not the runtime user\'s to change')
  t.match(runtime, /apt-get install -y --no-install-recommends tini/)
  t.match(runtime, /^ENTRYPOINT \["\/usr\/bin\/tini", "--", "node", "--max-semi-space-size=8", "bin\/gateway\.js"\]$/m, 'tini forwards signals to its child only (no -g)')
  t.match(runtime, /^STOPSIGNAL SIGTERM$/m)
  t.match(runtime, new RegExp(`^EXPOSE ${['PORT', 'HARNESS_PORT', 'HARNESS_PEER_PORT'].map(defaultOf).join(' ')}$`, 'm'), 'the ports the gateway listens on by default')
  t.match(runtime, /COPY --from=build \/app\/sbom\.cdx\.json/, 'the SBOM travels with the image')
})

t.test('OCI labels: source, revision, version and licence; the version is the package\'s, the chart\'s and the changelog\'s', async t => {
  for (const key of ['source', 'revision', 'version', 'licenses']) t.match(runtime, new RegExp(`org\\.opencontainers\\.image\\.${key}=`), key)
  t.match(runtime, /org\.opencontainers\.image\.licenses="Apache-2\.0"/)
  t.equal(/^ARG VERSION=(.+)$/m.exec(runtime)?.[1], pkg.version, 'Dockerfile VERSION')
  t.equal(parse(readRepo('deploy/helm/evidence-gateway/Chart.yaml')).appVersion, pkg.version, 'the chart\'s appVersion')
  const changelog = readRepo('CHANGELOG.md')
  t.match(changelog, /^## \[Unreleased\]$/m, 'a section for what the next release brings')
  t.equal(/^## \[(\d+\.\d+\.\d+)\]/m.exec(changelog)?.[1], pkg.version, 'the newest released section')
})

t.test('the licence is the one package.json names, and security reports have a way in', async t => {
  t.equal(pkg.license, 'Apache-2.0')
  const license = readRepo('LICENSE')
  t.match(license, /^\s+Apache License\n\s+Version 2\.0, January 2004\n/)
  t.match(license, /END OF TERMS AND CONDITIONS/)
  t.match(readRepo('SECURITY.md'), /## Reporting a vulnerability\n\nReport it privately/)
})

t.test('the SBOM lists every installed production package and no development one', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'sbom-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'sbom.cdx.json')
  await run(process.execPath, [join(root, 'scripts/sbom.mjs'), file])
  const bom = JSON.parse(readFileSync(file, 'utf8'))
  t.equal(bom.bomFormat, 'CycloneDX')
  t.match(bom.metadata.component, { name: pkg.name, version: pkg.version, licenses: [{ license: { id: 'Apache-2.0' } }] })
  const listed = new Set(bom.components.map((c: any) => `${c.name}@${c.version}`))
  const lock = JSON.parse(readRepo('package-lock.json')).packages as Record<string, { version: string, dev?: boolean }>
  const entries = Object.entries(lock).filter(([path]) => path !== '' && existsSync(join(root, path)))
  const id = (path: string, v: { version: string }): string => `${path.replace(/^.*node_modules\//, '')}@${v.version}`
  const production = entries.filter(([, v]) => !v.dev).map(([p, v]) => id(p, v))
  t.ok(production.length > 50, `${production.length} production packages installed`)
  t.same(production.filter(p => !listed.has(p)), [], 'every production package, @aws-sdk/client-s3 included')
  t.same(entries.filter(([, v]) => v.dev).map(([p, v]) => id(p, v)).filter(p => listed.has(p)), [], 'no development package')
  t.ok(listed.has(`@aws-sdk/client-s3@${lock['node_modules/@aws-sdk/client-s3']!.version}`))
  const refs = new Set([bom.metadata.component['bom-ref'], ...bom.components.map((c: any) => c['bom-ref'])])
  t.same(bom.dependencies.flatMap((d: any) => [d.ref, ...(d.dependsOn ?? [])]).filter((r: string) => !refs.has(r)), [], 'the dependency graph names listed components only')
})
