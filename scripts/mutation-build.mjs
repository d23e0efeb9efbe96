#!/usr/bin/env node
// Stryker's buildCommand (stryker.config.mjs), run in its sandbox once per
// group: links the project's node_modules (Stryker links it only after the
// build), compiles the instrumented sources and the tests to .mutation-build/
// and copies beside them what the tests read (fixtures, the README's config
// table). Each mutant then runs plain JS.
import { cpSync, existsSync, symlinkSync } from 'node:fs'
import { execFileSync } from 'node:child_process'

const [nodeModules] = process.argv.slice(2)
if (nodeModules === undefined) throw new Error('usage: mutation-build.mjs <node_modules of the project>')
if (!existsSync('node_modules')) symlinkSync(nodeModules, 'node_modules', 'dir')
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'test/tsconfig.mutation.json'], { stdio: 'inherit' })
cpSync('test/fixtures', '.mutation-build/test/fixtures', { recursive: true })
cpSync('README.md', '.mutation-build/README.md')
