import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { BrowserContext, Page, Request } from 'playwright-core'
import { DEMO_SESSION_ID, DEMO_USER_ID, seedDemo } from '../../src/cli/seed-demo.js'
import { FolderServiceClient } from '../../src/client/index.js'
import { validateImport } from '../../src/import/validate-import.js'
import { insertLiveFolder, openRawSql } from '../../harness/raw-sql.js'
import { seriousAxeViolations } from '../helpers/browser/axe.js'
import { NO_CHROMIUM, useChromium } from '../helpers/browser/chromium.js'
import { allBackends } from '../helpers/databases/backends.js'
import { serveBackend, type ServedBackend } from '../helpers/apps/served-backend.js'

/**
 * The folder browser across sign-outs, in a real headless Chromium against a real `serve`
 * process on each backend: the demo user and a second user, Bea, each with a session. The
 * session cookie is one for every window of a browser profile, so a sign-out or a sign-in
 * in one window changes it under the others: a sign-out in one of three windows of a
 * session stops the other two at once (the leader's held request aborted, no request and
 * nothing shown after); a sign-in as Bea while the demo user's windows follow leaves them
 * at once, none shows or relays the other user's answers, and they say who is signed in
 * now; a sign-out clears the list, count and pagers, so the next user sees nothing of the
 * last one. Every text put into the list, the tree, the count and the breadcrumbs of every
 * window is recorded from the page's start (a MutationObserver), so "never shown" is
 * checked on everything that reached the page, not on one moment's screen.
 */

const PROJECTS = 'de000000-0000-4000-8000-0000000f0002'
const DOCUMENTS = 'de000000-0000-4000-8000-0000000f0001'
const BEA_ID = 'be000000-0000-4000-8000-000000000001'
const BEA_SESSION_ID = 'be000000-0000-4000-8000-00000000c00c'
/** Bea's folders: none of their names is one of the demo user's */
const BEA_FOLDERS = ['Recipes', 'Travel']
/** Names, counts and crumbs only the demo user's pages show */
const DEMO_TEXTS = ['Documents', 'Projects', 'Project 1', 'Contracts', '5 folders', '60 folders']

/**
 * Records every node put under the list, the tree, the count and the breadcrumbs, with its
 * text, from the page's start (before its own script runs). The page's CSP does not apply
 * to a script the DevTools protocol adds.
 */
const RECORDER = `
  globalThis.__seen = []
  new MutationObserver((records) => {
    for (const record of records)
      for (const node of record.addedNodes) {
        const element = node.nodeType === 1 ? node : node.parentElement
        if (element && element.closest('#folders, #tree, #total, #breadcrumbs'))
          globalThis.__seen.push(node.textContent || '')
      }
  }).observe(document, { childList: true, subtree: true })
`

interface PageGlobals {
  __seen: string[]
  document: { activeElement: { textContent: string | null } | null }
}

/** Everything the page was given to show since the `from`th record. */
const seen = (page: Page, from = 0) =>
  page.evaluate((start) => (globalThis as unknown as PageGlobals).__seen.slice(start), from)
const seenCount = (page: Page) => page.evaluate(() => (globalThis as unknown as PageGlobals).__seen.length)
const focused = (page: Page) =>
  page.evaluate(() => (globalThis as unknown as PageGlobals).document.activeElement?.textContent ?? null)
/** The texts of `texts` that `records` hold. */
const among = (records: string[], texts: string[]) =>
  texts.filter((text) => records.some((record) => record.includes(text)))

async function waitForListed(page: Page, name: string): Promise<void> {
  await page.locator(`#folders a.name:text-is("${name}")`).waitFor()
}
async function waitForTree(page: Page, name: string): Promise<void> {
  await page.locator(`#tree .tree-name:text-is("${name}")`).waitFor()
}

/** Polls `condition` until it holds (at most 10 s). */
async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (const started = Date.now(); !condition(); await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (Date.now() - started > 10_000) assert.fail(`timed out waiting for ${what}`)
  }
}

/** What the list, tree, count, pagers and breadcrumbs of a page hold now. */
async function leftOnPage(page: Page) {
  return {
    rows: await page.locator('#folders > *').count(),
    tree: await page.locator('#tree > *').count(),
    total: await page.locator('#total').textContent(),
    crumbs: await page.locator('#breadcrumbs > *').count(),
    pagers: await page.locator('.pager:visible').count(),
    pageFields: await page
      .locator('.page-number')
      .evaluateAll((inputs) => inputs.map((input) => (input as unknown as { value: string }).value)),
  }
}
const NOTHING_LEFT = { rows: 0, tree: 0, total: '', crumbs: 0, pagers: 0, pageFields: ['', ''] }

/** One API request of a window: its page, and how it ended (null: not yet). */
interface ApiRequest {
  request: Request
  page: Page
  ended: 'answered' | 'failed' | null
}

/** Every API request of the context's windows, in the order they were sent. */
function recordApi(context: BrowserContext): ApiRequest[] {
  const requests: ApiRequest[] = []
  const find = (request: Request) => requests.find((entry) => entry.request === request)
  context.on('request', (request) => {
    if (new URL(request.url()).pathname.startsWith('/v1/'))
      requests.push({ request, page: request.frame().page(), ended: null })
  })
  context.on('requestfinished', (request) => {
    const entry = find(request)
    if (entry !== undefined) entry.ended = 'answered'
  })
  context.on('requestfailed', (request) => {
    const entry = find(request)
    if (entry !== undefined) entry.ended = 'failed'
  })
  return requests
}
const heldTrees = (requests: ApiRequest[]) =>
  requests.filter((entry) => entry.ended === null && entry.request.url().includes('/v1/folders/tree'))

const browser = useChromium()

for (const backend of allBackends()) {
  describe(
    `folder browser across sign-outs on ${backend.name}`,
    { skip: NO_CHROMIUM || backend.skip },
    () => {
      let served: ServedBackend
      const contexts: BrowserContext[] = []
      const consoleErrors: string[] = []

      before(async () => {
        served = await serveBackend(backend, async (store) => {
          const now = Date.now()
          await seedDemo(store, now)
          await store.importData(
            validateImport(
              {
                users: [{ id: BEA_ID, username: 'bea', email: 'bea@example.org', is_suspended: false }],
                sessions: [{ id: BEA_SESSION_ID, user_id: BEA_ID, expires_at: null }],
                folders: BEA_FOLDERS.map((name) => ({ name, folder_id: null, owner_id: BEA_ID })),
              },
              now,
            ),
          )
        })
      })
      after(async () => {
        for (const context of contexts) await context.close()
        await served?.close()
      })

      /** A fresh browser profile, signed in with `session` (or not signed in). */
      async function profile(session: string | null): Promise<BrowserContext> {
        const context = await browser().newContext({ viewport: { width: 1280, height: 800 } })
        contexts.push(context)
        await context.addInitScript({ content: RECORDER })
        if (session !== null)
          await context.addCookies([{ name: 'session_id', value: session, url: served.service.base }])
        return context
      }

      async function openWindow(context: BrowserContext, path: string): Promise<Page> {
        const page = await context.newPage()
        page.setDefaultTimeout(10_000)
        page.setDefaultNavigationTimeout(30_000) // three windows' loads on a loaded machine
        page.on('console', (message) => {
          if (message.type() === 'error') consoleErrors.push(message.text())
        })
        page.on('pageerror', (error) => consoleErrors.push(error.message))
        await page.goto(`${served.service.base}${path}`)
        return page
      }

      async function signIn(page: Page, session: string): Promise<void> {
        await page.fill('#session-id', session)
        await page.click('#sign-in-form button[type=submit]')
      }

      it('a sign-out in one of three windows of a session stops the other two at once: the held request aborted, nothing after asked for or shown', async () => {
        const context = await profile(DEMO_SESSION_ID)
        const api = recordApi(context)
        const windows = [] as Page[]
        for (let i = 0; i < 3; i++) windows.push(await openWindow(context, `/#in=${PROJECTS}`))
        for (const w of windows) {
          await waitForListed(w, 'Project 1')
          await waitForTree(w, 'Projects')
        }
        await waitFor(() => heldTrees(api).length === 1, 'one held tree request for the three windows')
        const held = heldTrees(api)[0]!
        assert.ok(windows.includes(held.page), 'a window leads')
        // The case: the sign-out is in a window that does not hold the request.
        const signer = windows.find((w) => w !== held.page)!
        const others = windows.filter((w) => w !== signer)
        const sent = api.length

        await signer.click('#sign-out')
        await signer.locator('#sign-in').waitFor()
        for (const w of others) {
          await w.locator('#sign-in-reason').filter({ hasText: 'Signed out in another window.' }).waitFor()
          assert.equal(await w.locator('#who').textContent(), '')
        }
        // Nothing changed that the service could answer it with: only its abort ends it now.
        await waitFor(() => held.ended !== null, "the leader's held request to end")
        assert.equal(held.ended, 'failed', 'the leader aborted its held request')

        // A folder that user creates now reaches no window. The feed itself is alive: a
        // follower of the same session outside the browser gets it.
        const name = 'Created after the sign-out'
        const witness = new FolderServiceClient({ baseUrl: served.service.base, sessionId: DEMO_SESSION_ID })
        const abort = new AbortController()
        const follow = witness.tree({ wait: 20, signal: abort.signal })
        for (
          let batch = await follow.next();
          !batch.done && !batch.value.atPresent;
          batch = await follow.next()
        );
        const raw = await openRawSql(served.url)
        const id = randomUUID()
        try {
          await insertLiveFolder(raw, {
            id,
            name,
            parent: PROJECTS,
            owner: DEMO_USER_ID,
            at: Date.now(),
          })
          for (let batch = await follow.next(); !batch.done; batch = await follow.next())
            if (batch.value.changes.some((entry) => entry.type === 'upsert' && entry.folder.name === name))
              break
        } finally {
          abort.abort()
          // The other tests count the demo user's Projects as the demo has them.
          await raw.run(`UPDATE folders SET is_deleted = ${raw.true} WHERE id = ?`, id)
          await raw.close()
        }

        assert.deepEqual(
          api.slice(sent).map((entry) => entry.request.url()),
          [],
          'no request of any window after the sign-out',
        )
        for (const w of windows) {
          assert.deepEqual(among(await seen(w), [name]), [], 'never shown, nor relayed')
          assert.deepEqual(await leftOnPage(w), NOTHING_LEFT)
        }
        assert.deepEqual(await context.cookies(), [])
      })

      it("two users in one profile: a sign-in as Bea leaves the demo user's windows at once; none shows or relays the other's answers; they say who is signed in now", async () => {
        const context = await profile(null)
        const api = recordApi(context)
        // Bea's window is on the sign-in form before the demo user signs in in another.
        const beas = await openWindow(context, '/')
        await beas.locator('#sign-in').waitFor()
        const first = await openWindow(context, '/')
        await signIn(first, DEMO_SESSION_ID)
        await waitForListed(first, 'Projects')
        await first.click('#folders a:text-is("Projects")')
        await waitForListed(first, 'Project 1')
        const second = await openWindow(context, `/#in=${PROJECTS}`)
        for (const w of [first, second]) await waitForTree(w, 'Projects')
        await waitFor(() => heldTrees(api).length === 1, "one held tree request for the demo user's windows")
        const held = heldTrees(api)[0]!
        const leader = held.page
        const rest = leader === first ? second : first
        assert.ok(leader === first || leader === second)
        const sent = api.length

        await signIn(beas, BEA_SESSION_ID)
        await waitForListed(beas, 'Recipes')
        await waitForTree(beas, 'Travel')
        assert.equal(await beas.locator('#who').textContent(), 'Signed in as bea')

        // Both of the demo user's windows leave at once, and say who is signed in now.
        for (const w of [leader, rest]) {
          const text = w.locator('#state-text')
          await text.filter({ hasText: 'Now signed in as bea, in another window.' }).waitFor()
          assert.match((await text.textContent()) ?? '', /no longer shows the previous session's folders/)
          assert.equal(await w.locator('#who').textContent(), 'Signed in as bea')
          assert.equal(await w.title(), 'Signed in elsewhere · folder-service')
          assert.deepEqual(await leftOnPage(w), NOTHING_LEFT)
          assert.equal(await focused(w), 'Show my folders')
        }
        assert.deepEqual(await seriousAxeViolations(rest), [])
        // Nothing changed that the service could answer it with: only its abort ends it now.
        await waitFor(() => held.ended !== null, "the demo user's held request to end")
        assert.equal(held.ended, 'failed', 'the leader aborted its held request')
        // The race: the demo user's leader closes; the window next in line must not
        // take over with Bea's cookie (and relay her tree on the demo user's channel).
        await leader.close()

        assert.deepEqual(
          among(await seen(rest), BEA_FOLDERS),
          [],
          "the demo user's window never got Bea's folders",
        )
        assert.deepEqual(among(await seen(beas), DEMO_TEXTS), [], "Bea's window never got the demo user's")
        const others = api.slice(sent).filter((entry) => entry.page !== beas)
        assert.deepEqual(
          others.map((entry) => entry.request.url()),
          [],
          "no request of the demo user's windows after Bea signed in",
        )

        // Asked to, the window shows Bea's folders, and follows her tree.
        await rest.click('#resume')
        await waitForListed(rest, 'Recipes')
        await waitForTree(rest, 'Travel')
        assert.equal(await rest.locator('#who').textContent(), 'Signed in as bea')
        assert.equal(await rest.locator('#state').isHidden(), true)
      })

      it('a sign-out clears the list, its count and pagers at once; the next user sees nothing of the last one, Back included', async () => {
        const context = await profile(DEMO_SESSION_ID)
        const page = await openWindow(context, `/#in=${DOCUMENTS}`)
        await waitForListed(page, 'Contracts')
        await page.goto(`${served.service.base}/#in=${PROJECTS}`)
        await waitForListed(page, 'Project 1')
        await page.locator('#pager-top .page-number').filter({ visible: true }).waitFor()
        assert.equal(await page.locator('#total').textContent(), '60 folders')

        await page.click('#sign-out')
        assert.deepEqual(await leftOnPage(page), NOTHING_LEFT, 'cleared at the click, not only hidden')
        await page.locator('#sign-in').waitFor()

        // Bea signs in in that window; her first answer is held until the page was looked at.
        const from = await seenCount(page)
        let release = () => {}
        const released = new Promise<void>((resolve) => (release = resolve))
        let asked = false
        const bea = (url: URL) => url.pathname === '/v1/folders' && !url.searchParams.has('folder_id')
        await page.route(bea, async (route) => {
          asked = true
          await released
          await route.continue().catch(() => undefined)
        })
        try {
          await signIn(page, BEA_SESSION_ID)
          await page.locator('#browser').waitFor()
          await waitFor(() => asked, "Bea's listing to be asked for")
          assert.deepEqual(
            {
              rows: await page.locator('#folders > *').count(),
              total: await page.locator('#total').textContent(),
            },
            { rows: 0, total: '' },
            'nothing listed while her answer is on its way',
          )
        } finally {
          release()
          await page.unroute(bea)
        }
        await waitForListed(page, 'Recipes')
        assert.equal(await page.locator('#total').textContent(), '2 folders')

        // Back goes to the demo user's pages of this window: not found, and never named.
        await page.goBack()
        await waitForListed(page, 'Recipes')
        await page.goBack()
        await page.locator('#state-text').filter({ hasText: 'This folder was not found' }).waitFor()
        assert.deepEqual(await page.locator('#breadcrumbs li').allTextContents(), [
          'Home',
          'Folder not found',
        ])
        assert.deepEqual(
          among(await seen(page, from), DEMO_TEXTS),
          [],
          'nothing of the demo user after the sign-out',
        )
      })

      it('logged no console error (no CSP violation, no script error)', () => {
        // 404: the demo user's folder asked for as Bea (Back).
        assert.deepEqual(
          consoleErrors.filter((text) => !/status of 404/.test(text)),
          [],
        )
      })
    },
  )
}
