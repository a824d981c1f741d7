import { existsSync } from 'node:fs'
import { after, before } from 'node:test'
import { chromium, type Browser } from 'playwright-core'

/**
 * The headless Chromium of the browser tests: Debian's `chromium` (or CHROMIUM_PATH),
 * driven by playwright-core; nothing downloads a browser.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** false when Chromium is there; else why the browser tests are skipped */
export const NO_CHROMIUM = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (.ci/run installs it)`

/**
 * The one Chromium of a test file: launched before its tests (unless NO_CHROMIUM), closed
 * after them. Call at the top level of the file.
 */
export function useChromium(): () => Browser {
  let browser: Browser | undefined
  before(async () => {
    if (NO_CHROMIUM !== false) return
    // Chromium's sandbox needs an unprivileged user; CI runs as root in a container.
    const args = process.getuid?.() === 0 ? ['--no-sandbox'] : []
    browser = await chromium.launch({ executablePath: CHROMIUM, args })
  })
  after(() => browser?.close())
  return () => {
    if (browser === undefined) throw new Error('Chromium starts before the tests')
    return browser
  }
}
