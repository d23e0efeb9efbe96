#!/usr/bin/env node
// Prints the README's configuration table from the config schema (run after `npm run build`).
// test/config/load.test.ts fails when the README and the schema disagree.
import { variables } from '../dist/config/variables.js'

console.log('| variable | default | meaning |')
console.log('|---|---|---|')
for (const v of variables) {
  const d = 'default' in v ? (Array.isArray(v.default) ? v.default.join(',') : String(v.default)) : ''
  const allowed = v.enum && v.type !== 'list' ? ` (${v.enum.join(' \\| ')})` : ''
  console.log(`| \`${v.name}\` | ${d === '' ? '' : `\`${d}\``} | ${v.description.replace(/\|/g, '\\|')}${allowed} |`)
}
