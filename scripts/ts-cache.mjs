// Preloaded into every test process (package.json "tap" "node-arg"): keeps
// ts-node's transpiled output of each .ts module on disk, so the suite
// transpiles src/ once instead of once per test file (about 3 s of CPU for
// each file that starts a gateway, on a 2-core machine running three files
// at a time). The hooks are in ts-cache-hooks.mjs.
import { register } from 'node:module'

register('./ts-cache-hooks.mjs', import.meta.url)
