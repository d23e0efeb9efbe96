#!/usr/bin/env node
// The CycloneDX SBOM of what the gateway runs: `npm sbom` of the installed tree, less the packages npm
// marks as development ones, with the package's own name (npm takes the folder's). Not `npm sbom
// --omit dev`: npm 11 then leaves out production packages a development one also depends on
// (@aws-sdk/client-s3, through @aws-sdk/lib-storage). The Dockerfile runs it after pruning the dev
// dependencies; test/deploy/image.test.ts checks it against package-lock.json.
// Usage: node scripts/sbom.mjs [out.json]   (stdout without an argument)
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const bom = JSON.parse(execFileSync(npm, ['sbom', '--sbom-format', 'cyclonedx', '--sbom-type', 'application'], {
  cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024
}))

const development = c => c.properties?.some(p => p.name === 'cdx:npm:package:development' && p.value === 'true')
const dropped = new Set(bom.components.filter(development).map(c => c['bom-ref']))
bom.metadata.component.name = pkg.name
bom.components = bom.components.filter(c => !dropped.has(c['bom-ref']))
bom.dependencies = bom.dependencies
  .filter(d => !dropped.has(d.ref))
  .map(d => ({ ...d, dependsOn: d.dependsOn?.filter(ref => !dropped.has(ref)) }))

const text = JSON.stringify(bom, null, 2) + '\n'
if (process.argv[2]) writeFileSync(process.argv[2], text)
else process.stdout.write(text)
