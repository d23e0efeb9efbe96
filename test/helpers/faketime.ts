import { existsSync } from 'node:fs'

interface Tap { fail: (...args: any[]) => unknown }

const MULTIARCH: Record<string, string> = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' }

/**
 * The environment that sets a child process's wall clock `offset` away
 * ('+6m', '-90s') with Debian's libfaketime, preloaded from outside the
 * process: nothing in the gateway knows. Monotonic clocks are left alone,
 * as a machine whose clock is merely set wrong has them. Undefined after a
 * failure when the library is missing (`npm test` installs it:
 * scripts/test.mjs; or `apt-get install -y faketime`).
 */
export function fakeClock (t: Tap, offset: string): Record<string, string> | undefined {
  const library = process.env['FAKETIME_LIB'] ?? `/usr/lib/${MULTIARCH[process.arch] ?? process.arch}/faketime/libfaketimeMT.so.1`
  if (!existsSync(library)) {
    t.fail(`libfaketime not found at ${library}: run through \`npm test\`, which installs it, or apt-get install -y faketime (FAKETIME_LIB names another path)`)
    return undefined
  }
  return { LD_PRELOAD: library, FAKETIME: offset, DONT_FAKE_MONOTONIC: '1' }
}
