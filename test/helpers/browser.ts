import { execFileSync } from 'node:child_process'
import { chromium, type Browser, type Page } from 'playwright-core'

interface Tap { teardown(fn: () => unknown): void }

/**
 * Debian's chromium (CHROMIUM_PATH, else `chromium` on PATH; scripts/test.mjs
 * installs it when missing). Never a browser that playwright downloads.
 */
export function chromiumPath (): string {
  const given = process.env['CHROMIUM_PATH']
  if (given) return given
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim()
  } catch {
    throw new Error('chromium not found: `apt-get install -y chromium` (npm test installs it), or set CHROMIUM_PATH')
  }
}

/** A headless chromium, closed at teardown. */
export async function launchBrowser (t: Tap): Promise<Browser> {
  // --no-sandbox: tests run as root here, where chromium refuses its sandbox.
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox', '--disable-dev-shm-usage'] })
  t.teardown(() => browser.close())
  return browser
}

/** A page that fails the test on any error the console's scripts throw. */
export async function openPage (browser: Browser, t: { fail(msg: string): void }): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } })
  page.on('pageerror', err => t.fail(`page error: ${err.message}`))
  return page
}

/** The seqs of a run page's timeline, in the order shown. */
export function timelineSeqs (page: Page): Promise<number[]> {
  return page.$$eval('#timeline li', items => items.map(li => Number(li.getAttribute('data-seq'))))
}
