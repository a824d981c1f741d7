import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { chromium, type Browser, type Page, type Request } from 'playwright-core'
import { DEMO_SESSION_ID, DEMO_USER_ID, seedDemo } from '../../src/cli/seed-demo.js'
import { BROWSER_CSP } from '../../src/routes/browser.js'
import { allBackends } from '../helpers/backends.js'
import { insertLiveFolder, openRawSql } from '../helpers/raw-sql.js'
import { serveBackend, type ServedBackend } from '../helpers/served-backend.js'
import { ROOT } from '../helpers/build.js'
import { runCli } from '../helpers/cli.js'

/**
 * The folder browser at `/` in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core; nothing downloads a browser), against a real `serve` process on each
 * backend seeded with the demo data: sign in, open a folder, page 2, breadcrumbs, reload,
 * the back button, page size, live updates of the open page (raw-SQL writes shown without a
 * reload, none while the tab is hidden), breadcrumb names from the service only, an
 * out-of-range page, the 401/404/503/403 states, sign out. Any console error (a CSP
 * violation included) and any 404 of the page's own resources fail the run.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
/** the demo's folder with 60 children (src/cli/seed-demo.ts) */
const PROJECTS = 'de000000-0000-4000-8000-0000000f0002'
export const SCREENSHOT = `${ROOT}docs/folder-browser.png`

/** The texts of the folder list, in order. */
const listed = (page: Page) => page.locator('#folders li').allTextContents()
const crumbs = (page: Page) => page.locator('#breadcrumbs li').allTextContents()
const position = (page: Page) => page.locator('#position').textContent()

/** A folder of the demo user under Projects, inserted by raw SQL as another writer would. */
async function addProject(url: string, name: string): Promise<void> {
  const raw = await openRawSql(url)
  try {
    await insertLiveFolder(raw, {
      id: randomUUID(),
      name,
      parent: PROJECTS,
      owner: DEMO_USER_ID,
      at: Date.now(),
    })
  } finally {
    await raw.close()
  }
}

/** Polls `condition` until it holds (at most 10 s). */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (const started = Date.now(); !condition(); await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (Date.now() - started > 10_000) assert.fail(`timed out waiting for ${what}`)
  }
}

/** Waits until the listing shows `first` as its first folder (the render is asynchronous). */
async function waitForFirst(page: Page, first: string): Promise<void> {
  await page.locator('#folders li').first().filter({ hasText: first }).waitFor()
}

/** What the tests touch of the page's window and document (the test code has no DOM types). */
interface PageGlobals {
  marker?: string
  scrollY: number
  scrollTo(x: number, y: number): void
  document: object & { dispatchEvent(event: unknown): void }
  Event: new (type: string) => unknown
}

const NO_CHROMIUM = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (.ci/run installs it)`
let browser: Browser | undefined

before(async () => {
  if (NO_CHROMIUM !== false) return
  // Chromium's sandbox needs an unprivileged user; CI runs as root in a container.
  const args = process.getuid?.() === 0 ? ['--no-sandbox'] : []
  browser = await chromium.launch({ executablePath: CHROMIUM, args })
})
after(() => browser?.close())

for (const backend of allBackends()) {
  describe(`folder browser on ${backend.name}`, { skip: NO_CHROMIUM || backend.skip }, () => {
    let served: ServedBackend
    let page: Page
    const consoleErrors: string[] = []
    /** 404 answers to anything but the API (the page's own resources, a favicon) */
    const missing: string[] = []
    /** changes requests of the page not answered yet */
    const held = new Set<Request>()
    const setVisibility = (state: string) =>
      page.evaluate((value) => {
        const w = globalThis as unknown as PageGlobals
        Object.defineProperty(w.document, 'visibilityState', { value, configurable: true })
        Object.defineProperty(w.document, 'hidden', { value: value === 'hidden', configurable: true })
        w.document.dispatchEvent(new w.Event('visibilitychange'))
      }, state)

    before(async () => {
      served = await serveBackend(backend, (store) => seedDemo(store, Date.now()))
      const context = await (browser as Browser).newContext({ viewport: { width: 960, height: 720 } })
      page = await context.newPage()
      page.setDefaultTimeout(10_000)
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(message.text())
      })
      page.on('pageerror', (error) => consoleErrors.push(error.message))
      page.on('request', (request) => {
        if (request.url().includes('/v1/folders/changes')) held.add(request)
      })
      page.on('requestfinished', (request) => held.delete(request))
      page.on('requestfailed', (request) => held.delete(request))
      page.on('response', (response) => {
        if (response.status() === 404 && !new URL(response.url()).pathname.startsWith('/v1/')) {
          missing.push(response.url())
        }
      })
    })
    after(async () => {
      await page?.context().close()
      await served?.close()
    })

    it('serves the page with its strict CSP and asks to sign in', async () => {
      const response = await page.goto(`${served.service.base}/`)
      assert.equal(response?.status(), 200)
      assert.equal(response?.headers()['content-security-policy'], BROWSER_CSP)
      await page.locator('#sign-in').waitFor()
      assert.equal(await page.locator('#browser').isHidden(), true)
    })

    it('an unknown session gets the sign-in-again state', async () => {
      await page.fill('#session-id', randomUUID())
      await page.click('#sign-in-form button[type=submit]')
      await page.locator('#sign-in-reason').filter({ hasText: 'Sign in again' }).waitFor()
    })

    it('signs in with the demo session: a SameSite=Strict cookie and the root folders', async () => {
      await page.fill('#session-id', DEMO_SESSION_ID)
      await page.click('#sign-in-form button[type=submit]')
      await waitForFirst(page, 'Documents')
      assert.deepEqual(await listed(page), ['Documents', 'Music', 'Photos', 'Projects', 'archive'])
      assert.equal(await page.locator('#total').textContent(), '5 folders')
      const cookies = await page.context().cookies()
      const session = cookies.find((c) => c.name === 'session_id')
      assert.equal(session?.value, DEMO_SESSION_ID)
      assert.equal(session?.sameSite, 'Strict')
    })

    it('opens a folder, goes to page 2 from the Link header, and the URL keeps it over a reload', async () => {
      await page.click('#folders a:text-is("Projects")')
      await waitForFirst(page, 'Project 01')
      assert.deepEqual(await crumbs(page), ['Home', 'Projects'])
      assert.equal(await position(page), 'Page 1 of 2')
      assert.equal(await page.locator('#total').textContent(), '60 folders')
      assert.equal((await listed(page)).length, 50)
      assert.equal(await page.locator('#prev').isHidden(), true)

      await page.click('#next')
      await waitForFirst(page, 'Project 51')
      assert.equal(await position(page), 'Page 2 of 2')
      assert.equal((await listed(page)).length, 10)
      assert.equal(await page.locator('#next').isHidden(), true)
      assert.match(new URL(page.url()).hash, /page=2/)
      mkdirSync(`${ROOT}docs`, { recursive: true })
      await page.screenshot({ path: SCREENSHOT })

      await page.reload()
      await waitForFirst(page, 'Project 51')
      assert.equal(await position(page), 'Page 2 of 2')
      assert.deepEqual(await crumbs(page), ['Home', 'Projects'])

      await page.goBack()
      await waitForFirst(page, 'Project 01')
      assert.equal(await position(page), 'Page 1 of 2')
    })

    it('follows breadcrumbs back up; reload and the back button land on the same place', async () => {
      await page.click('#breadcrumbs a:text-is("Home")')
      await waitForFirst(page, 'Documents')
      await page.click('#folders a:text-is("Documents")')
      await waitForFirst(page, 'Contracts')
      await page.click('#folders a:text-is("Taxes")')
      await waitForFirst(page, '2024')
      assert.deepEqual(await crumbs(page), ['Home', 'Documents', 'Taxes'])

      await page.click('#breadcrumbs a:text-is("Documents")')
      await waitForFirst(page, 'Contracts')
      assert.deepEqual(await listed(page), ['Contracts', 'Invoices', 'Taxes'])
      await page.reload()
      await waitForFirst(page, 'Contracts')
      assert.deepEqual(await crumbs(page), ['Home', 'Documents'])

      await page.goBack()
      await waitForFirst(page, '2024')
      assert.deepEqual(await listed(page), ['2024', '2025'])
    })

    it('changes the page size', async () => {
      await page.click('#breadcrumbs a:text-is("Home")')
      await page.click('#folders a:text-is("Projects")')
      await waitForFirst(page, 'Project 01')
      await page.selectOption('#limit', '20')
      await page.locator('#position').filter({ hasText: 'Page 1 of 3' }).waitFor()
      assert.equal((await listed(page)).length, 20)
      assert.match(new URL(page.url()).hash, /limit=20/)
    })

    it('shows raw-SQL writes on the open page without a reload, keeping its page and scroll', async () => {
      await page.setViewportSize({ width: 960, height: 400 })
      await page.goto(`${served.service.base}/`)
      await page.click('#folders a:text-is("Projects")')
      await waitForFirst(page, 'Project 01')
      await page.evaluate(() => {
        const w = globalThis as unknown as PageGlobals
        w.marker = 'no reload'
        w.scrollTo(0, 300)
      })
      const scrolled = await page.evaluate(() => (globalThis as unknown as PageGlobals).scrollY)
      assert.ok(scrolled > 0, 'the page scrolls')
      const raw = await openRawSql(served.url)
      try {
        const id = randomUUID()
        await insertLiveFolder(raw, {
          id,
          name: 'Project 00',
          parent: PROJECTS,
          owner: DEMO_USER_ID,
          at: Date.now(),
        })
        await waitForFirst(page, 'Project 00')
        assert.equal(await page.locator('#total').textContent(), '61 folders')
        await raw.run('UPDATE folders SET name = ? WHERE id = ?', 'Project 00 renamed', id)
        await waitForFirst(page, 'Project 00 renamed')
        await raw.run(`UPDATE folders SET is_deleted = ${raw.true} WHERE id = ?`, id)
        await waitForFirst(page, 'Project 01')
        assert.equal(await page.locator('#total').textContent(), '60 folders')
      } finally {
        await raw.close()
      }
      assert.equal(await page.evaluate(() => (globalThis as unknown as PageGlobals).marker), 'no reload')
      assert.equal(
        await page.evaluate(() => (globalThis as unknown as PageGlobals).scrollY),
        scrolled,
        'scroll position kept',
      )
      assert.equal(await position(page), 'Page 1 of 2')
      await page.setViewportSize({ width: 960, height: 720 })
    })

    it('follows no changes while the tab is hidden, and catches up when it is shown', async () => {
      try {
        await page.locator('#folders a').first().waitFor()
        await waitFor(() => held.size === 1, 'a held changes request')
        await setVisibility('hidden')
        await waitFor(() => held.size === 0, 'the held request ended')
        await addProject(served.url, 'Project 00 while hidden')
        await new Promise((resolve) => setTimeout(resolve, 1500))
        assert.equal(held.size, 0, 'no changes request while hidden')
        assert.equal((await listed(page))[0], 'Project 01', 'nothing shown while hidden')
        await setVisibility('visible')
        await waitForFirst(page, 'Project 00 while hidden')
        await waitFor(() => held.size === 1, 'following again')
      } finally {
        await setVisibility('visible')
      }
    })

    it('on 410 CURSOR_EXPIRED it lists the page again and goes on following', async () => {
      let expired = 0
      await page.route(
        '**/v1/folders/changes**',
        (route) => {
          expired++
          return route.fulfill({
            status: 410,
            headers: { 'content-type': 'application/problem+json' },
            body: JSON.stringify({
              type: 'about:blank',
              title: 'Gone',
              status: 410,
              code: 'CURSOR_EXPIRED',
              detail: 'The changes after this cursor are no longer kept.',
              request_id: 'test',
            }),
          })
        },
        { times: 1 },
      )
      await setVisibility('hidden')
      await setVisibility('visible') // a new render: its first changes request gets the 410
      await waitFor(() => expired === 1, 'the 410')
      await addProject(served.url, 'Project 0 after the reset')
      await waitForFirst(page, 'Project 0 after the reset')
      assert.equal(await page.locator('#state').isHidden(), true)
    })

    it('breadcrumb names come from the service, never from the URL fragment', async () => {
      // A fresh tab (nothing remembered), a fragment naming the folder with someone's text.
      const fresh = await page.context().newPage()
      try {
        await fresh.goto(`${served.service.base}/#in=${PROJECTS}:Your account is locked. Call 555-0100`)
        await fresh.locator('#folders li').first().filter({ hasText: 'Project' }).waitFor()
        await fresh.locator('#breadcrumbs li').filter({ hasText: 'Projects' }).waitFor()
        assert.deepEqual(await crumbs(fresh), ['Home', 'Projects'])
        assert.equal(await fresh.getByText('locked').count(), 0)

        await fresh.goto(`${served.service.base}/#in=${randomUUID()}:Your account is locked`)
        await fresh.locator('#state-text').filter({ hasText: 'This folder is gone' }).waitFor()
        assert.equal(await fresh.getByText('locked').count(), 0)
      } finally {
        await fresh.close()
      }
    })

    it('an out-of-range page in the fragment lands on the last page, not on a 400', async () => {
      await page.goto(`${served.service.base}/#in=${PROJECTS}&page=9999999999`)
      await page.locator('#position').filter({ hasText: 'Page 2 of 2' }).waitFor()
      await page.locator('#folders a').first().waitFor()
      assert.equal(await page.locator('#state').isHidden(), true)
      assert.match(new URL(page.url()).hash, /page=2(&|$)/)
      await page.goto(`${served.service.base}/#in=${PROJECTS}&page=7`)
      await page.locator('#position').filter({ hasText: 'Page 2 of 2' }).waitFor()
    })

    it('declares its icon: no request for a missing /favicon.ico', async () => {
      const href = await page.locator('link[rel="icon"]').getAttribute('href')
      assert.ok(href !== null, 'the page declares an icon')
      const icon = await page.request.get(new URL(href, served.service.base).href)
      assert.equal(icon.status(), 200)
      assert.match(icon.headers()['content-type'] ?? '', /^image\//)
      assert.deepEqual(missing, [])
    })

    it('shows a folder that is gone as 404, with a way back to the root', async () => {
      await page.goto(`${served.service.base}/#in=${randomUUID()}:Vanished`)
      await page.locator('#state-text').filter({ hasText: 'This folder is gone' }).waitFor()
      assert.equal(await page.locator('#to-root').isVisible(), true)
      await page.click('#to-root')
      await waitForFirst(page, 'Documents')
    })

    it('shows 503 as try-again, and Try again recovers', async () => {
      // The service's 503 needs its database gone; the page's handling of the answer is what
      // is tested here, so the browser is given that answer for a moment.
      await page.route('**/v1/folders**', (route) =>
        route.fulfill({
          status: 503,
          headers: { 'content-type': 'application/problem+json', 'retry-after': '0' },
          body: JSON.stringify({
            type: 'about:blank',
            title: 'Service Unavailable',
            status: 503,
            code: 'UNAVAILABLE',
            detail: 'The database is not reachable.',
            request_id: 'test',
          }),
        }),
      )
      await page.reload()
      await page.locator('#state-text').filter({ hasText: 'unavailable' }).waitFor()
      await page.unroute('**/v1/folders**')
      await page.click('#retry')
      await waitForFirst(page, 'Documents')
    })

    it('shows the frozen-account state once an operator freezes the account', async () => {
      const frozen = await runCli(['user', 'freeze', 'demo', '--db', served.url])
      assert.equal(frozen.code, 0, frozen.stderr)
      await page.reload()
      await page.locator('#state-text').filter({ hasText: 'This account is frozen' }).waitFor()
      assert.deepEqual(await listed(page), [])
    })

    it('signs out: the cookie is gone and the page asks to sign in', async () => {
      await page.click('#sign-out')
      await page.locator('#sign-in').waitFor()
      const cookies = await page.context().cookies()
      assert.equal(
        cookies.find((c) => c.name === 'session_id'),
        undefined,
      )
      await page.reload()
      await page.locator('#sign-in').waitFor()
    })

    it('logged no console error (no CSP violation, no script error)', () => {
      assert.deepEqual(
        consoleErrors.filter((text) => !/status of (401|403|404|410|503)/.test(text)),
        [],
      )
      assert.deepEqual(missing, [], 'no 404 of the page itself')
    })
  })
}
