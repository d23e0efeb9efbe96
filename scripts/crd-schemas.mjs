#!/usr/bin/env node
// CRD files (YAML, as controller-gen writes them) to the JSON schemas kubeconform reads:
// <out>/<group>/<kind>_<version>.json, one per served version. Strict as the Kubernetes schemas
// kubeconform is given: an object that lists its properties admits no other, unless the CRD says it
// keeps unknown fields. Usage: node scripts/crd-schemas.mjs <crd dir> <out dir>
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'

function strict (schema) {
  if (Array.isArray(schema)) return schema.map(strict)
  if (schema === null || typeof schema !== 'object') return schema
  const out = Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === 'enum' || k === 'default' || k === 'example' ? v : strict(v)]))
  if (out.properties && out.additionalProperties === undefined && !out['x-kubernetes-preserve-unknown-fields']) out.additionalProperties = false
  return out
}

const [dir, out] = process.argv.slice(2)
if (!dir || !out) throw new Error('usage: crd-schemas.mjs <crd dir> <out dir>')
let written = 0
for (const file of readdirSync(dir).filter(f => /\.ya?ml$/.test(f))) {
  for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
    const crd = doc.toJS()
    if (crd?.kind !== 'CustomResourceDefinition') continue
    for (const version of crd.spec.versions) {
      const folder = join(out, crd.spec.group)
      mkdirSync(folder, { recursive: true })
      writeFileSync(join(folder, `${crd.spec.names.kind.toLowerCase()}_${version.name}.json`), JSON.stringify(strict(version.schema.openAPIV3Schema)))
      written++
    }
  }
}
if (written === 0) throw new Error(`no CustomResourceDefinition in ${dir}`)
console.error(`crd-schemas: ${written} schemas in ${out}`)
