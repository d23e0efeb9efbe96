// Mutation testing of the pure core (docs/testing.md). `npm run test:mutation`
// runs scripts/mutation.mjs, which runs Stryker once per group of
// scripts/mutation-groups.mjs with STRYKER_GROUP set;
// `STRYKER_GROUP=auth npx stryker run stryker.config.mjs` runs one group.
//
// The sandbox's instrumented sources and the tests are compiled once per group
// (buildCommand) and each mutant runs the compiled test files: loading them
// through ts-node cost ~8 s per mutant on this machine, plain JS ~2 s. Type
// errors are the TypeScript checker's job.
import { fileURLToPath } from 'node:url'
import { groups } from './scripts/mutation-groups.mjs'

const nodeModules = fileURLToPath(new URL('node_modules', import.meta.url))

const name = process.env.STRYKER_GROUP ?? ''
const group = groups[name]
if (group === undefined) throw new Error(`STRYKER_GROUP must be one of ${Object.keys(groups).join(', ')} (got "${name}")`)

export default {
  testRunner: 'tap',
  plugins: ['@stryker-mutator/tap-runner', '@stryker-mutator/typescript-checker'],
  mutate: group.mutate,
  // Stryker links node_modules only after the build: scripts/mutation-build.mjs links it.
  symlinkNodeModules: false,
  buildCommand: `node scripts/mutation-build.mjs ${nodeModules}`,
  tap: {
    testFiles: group.testFiles.map(f => `.mutation-build/${f.replace(/\.ts$/, '.js')}`),
    nodeArgs: [],
    // tap's parser never completes after a bail-out, so a mutant killed in the
    // first subtest would be reported as a timeout; the files are short.
    forceBail: false
  },
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  coverageAnalysis: 'perTest',
  concurrency: 3,
  // The machine is shared: a test file can take 15 s of wall clock under load.
  timeoutMS: 30_000,
  reporters: ['clear-text', 'progress-append-only', 'json', 'html'],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  clearTextReporter: { logTests: false, reportTests: false },
  tempDirName: '.stryker-tmp',
  ignorePatterns: ['dist', '.mutation-build', 'data', 'reports', 'bench/results', '.tap'],
  thresholds: { high: 85, low: 70, break: null }
}
