import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { type Page, type Route } from 'playwright-core'
import { DEMO_SESSION_ID, DEMO_USER_ID, seedDemo } from '../../src/cli/seed-demo.js'
import { FolderServiceClient, type Folder, type TreeEntry } from '../../src/client/index.js'
import { seriousAxeViolations } from '../helpers/browser/axe.js'
import { NO_CHROMIUM, useChromium } from '../helpers/browser/chromium.js'
import { allBackends } from '../helpers/databases/backends.js'
import { insertLiveFolder, openRawSql } from '../../harness/raw-sql.js'
import { serveBackend, type ServedBackend } from '../helpers/apps/served-backend.js'
import { folder, upsert } from '../helpers/fixtures/tree-entries.js'

/**
 * The folder browser's tree pane (src/browser/tree-pane.ts) in a real headless Chromium,
 * beside the listing of a real `serve` process with the demo data. The page's tree feed is
 * answered by a scripted feed inside the test (the demo's folders, then changes the test
 * pushes), which steers what the pane gets: the root's folders, expanding, the keys of the
 * WAI-ARIA tree pattern, the open folder highlighted, changes shown live, 10,000 folders
 * with only the expanded rows in the DOM, axe-core's rules. Where the service itself serves
 * GET /v1/folders/tree, raw-SQL writes by another process are also followed end to end.
 */

const PROJECTS = 'de000000-0000-4000-8000-0000000f0002'
/** How long a change may take to show: "within a second", with room for a loaded machine. */
const LIVE_MS = 3_000

const items = (page: Page) => page.locator('#tree [role="treeitem"]')
const itemNamed = (page: Page, name: string) =>
  page.locator(`#tree [role="treeitem"]:has(> .tree-name:text-is("${name}"))`)
const shownNames = (page: Page) => page.locator('#tree .tree-name').allTextContents()
const focusedItem = (page: Page) =>
  page.evaluate(() => {
    const active = (globalThis as unknown as { document: { activeElement: { textContent: string } | null } })
      .document.activeElement
    return active?.textContent ?? null
  })

/**
 * A tree feed scripted by the test (docs/api.md "The folder tree"): a download of
 * `folders`, then the batches pushed, each answered to a request held until it comes.
 */
class ScriptedTree {
  readonly #log: TreeEntry[][] = []
  #wake: (() => void)[] = []
  constructor(readonly folders: Folder[]) {}

  push(...entries: TreeEntry[]): void {
    this.#log.push(entries)
    for (const wake of this.#wake.splice(0)) wake()
  }

  async answer(route: Route): Promise<void> {
    const cursor = new URL(route.request().url()).searchParams.get('cursor')
    let body
    if (cursor === null) body = { changes: this.folders.map((f) => upsert(f)), cursor: 's0', has_more: false }
    else {
      const from = Number(cursor.slice(1))
      // Held while nothing is pending, as the service holds it (at most 20 s here).
      if (from >= this.#log.length)
        await new Promise<void>((resolve) => {
          this.#wake.push(resolve)
          setTimeout(resolve, 20_000).unref()
        })
      body = { changes: this.#log.slice(from).flat(), cursor: `s${this.#log.length}`, has_more: false }
    }
    await route
      .fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(body) })
      .catch(() => undefined) // the page went away meanwhile
  }
}

/** Every folder of the demo user, parents first, as the service lists them. */
async function demoFolders(base: string): Promise<Folder[]> {
  const client = new FolderServiceClient({ baseUrl: base, sessionId: DEMO_SESSION_ID })
  const folders: Folder[] = []
  const pending: (string | null)[] = [null]
  for (let parent = pending.shift(); parent !== undefined; parent = pending.shift()) {
    const page = await client.listFolders({ folderId: parent, limit: 100 })
    folders.push(...page.body.folders)
    pending.push(...page.body.folders.map((f) => f.id))
  }
  return folders
}

const browser = useChromium()

/** A signed-in page at 1280x800 whose tree feed is `feed`, or the service's own when null. */
async function openPage(served: ServedBackend, feed: ScriptedTree | null, errors: string[]): Promise<Page> {
  const context = await browser().newContext({ viewport: { width: 1280, height: 800 } })
  await context.addCookies([{ name: 'session_id', value: DEMO_SESSION_ID, url: served.service.base }])
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text())
  })
  page.on('pageerror', (error) => errors.push(error.message))
  if (feed !== null) await page.route('**/v1/folders/tree?**', (route) => feed.answer(route))
  // In exact order, which the assertions below spell out; the natural order has its own test.
  await page.goto(`${served.service.base}/#order=name`)
  await items(page).first().waitFor()
  return page
}

const [sqlite] = allBackends()
describe('tree pane, scripted tree feed', { skip: NO_CHROMIUM || sqlite?.skip }, () => {
  let served: ServedBackend
  let page: Page
  let feed: ScriptedTree
  const errors: string[] = []

  before(async () => {
    if (sqlite === undefined) return
    served = await serveBackend(sqlite, (store) => seedDemo(store, Date.now()))
    feed = new ScriptedTree(await demoFolders(served.service.base))
    page = await openPage(served, feed, errors)
  })
  after(async () => {
    await page?.context().close()
    await served?.close()
  })

  it("shows the root's folders, collapsed, in exact order", async () => {
    assert.deepEqual(await shownNames(page), ['Documents', 'Music', 'Photos', 'Projects', 'archive'])
    assert.equal(await page.locator('#tree').getAttribute('role'), 'tree')
    assert.equal(await itemNamed(page, 'Projects').getAttribute('aria-expanded'), 'false')
    assert.equal(await itemNamed(page, 'Projects').getAttribute('aria-level'), '1')
    assert.equal(await page.locator('#tree [tabindex="0"]').count(), 1, 'one tab stop')
    assert.equal(await page.locator('#tree-pane').isVisible(), true)
  })

  it("sorts siblings in the listing's order: natural when the Order control says so", async () => {
    await page.selectOption('#order', 'name_natural')
    await page.waitForFunction(() => {
      const first = (
        globalThis as unknown as { document: { querySelector(s: string): { textContent: string } | null } }
      ).document.querySelector('#tree .tree-name')
      return first?.textContent === 'archive'
    })
    assert.deepEqual(await shownNames(page), ['archive', 'Documents', 'Music', 'Photos', 'Projects'])
    await page.selectOption('#order', 'name')
    await page.waitForFunction(() => {
      const first = (
        globalThis as unknown as { document: { querySelector(s: string): { textContent: string } | null } }
      ).document.querySelector('#tree .tree-name')
      return first?.textContent === 'Documents'
    })
  })

  it('expanding shows the children (and only then are they in the DOM); the arrow collapses', async () => {
    await itemNamed(page, 'Projects').locator('.twisty').click()
    await itemNamed(page, 'Project 60').waitFor()
    assert.equal(await items(page).count(), 5 + 60)
    assert.equal(await itemNamed(page, 'Project 1').getAttribute('aria-level'), '2')
    assert.equal(await itemNamed(page, 'Projects').getAttribute('aria-expanded'), 'true')
    const parent = await itemNamed(page, 'Projects').locator('.tree-name').boundingBox()
    const child = await itemNamed(page, 'Project 1').locator('.tree-name').boundingBox()
    assert.ok(parent !== null && child !== null && child.x > parent.x, 'a child is indented')
    await itemNamed(page, 'Projects').locator('.twisty').click()
    await itemNamed(page, 'Project 1').waitFor({ state: 'detached' })
    assert.equal(await items(page).count(), 5)
  })

  it('keys: Down, Right expands then goes to the first child, Left to the parent then collapses, Enter opens', async () => {
    await itemNamed(page, 'Documents').focus()
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('ArrowDown')
    await page.keyboard.press('ArrowDown')
    assert.equal(await focusedItem(page), 'Projects')
    await page.keyboard.press('ArrowRight')
    await itemNamed(page, 'Project 1').waitFor()
    assert.equal(await focusedItem(page), 'Projects', 'expanding keeps the focus')
    await page.keyboard.press('ArrowRight')
    assert.equal(await focusedItem(page), 'Project 1')
    await page.keyboard.press('ArrowLeft')
    assert.equal(await focusedItem(page), 'Projects')
    await page.keyboard.press('ArrowLeft')
    await itemNamed(page, 'Project 1').waitFor({ state: 'detached' })
    await page.keyboard.press('End')
    assert.equal(await focusedItem(page), 'archive')
    await page.keyboard.press('Home')
    assert.equal(await focusedItem(page), 'Documents')
    await page.keyboard.press('ArrowRight')
    await itemNamed(page, 'Contracts').waitFor()
    await page.keyboard.press('ArrowRight')
    await page.keyboard.press('ArrowDown')
    assert.equal(await focusedItem(page), 'Invoices')
    await page.keyboard.press('Enter')
    await page.locator('#breadcrumbs li:last-child').filter({ hasText: 'Invoices' }).waitFor()
    assert.equal(await page.title(), 'Invoices · folder-service')
  })

  it('the open folder is highlighted and its ancestors expanded, wherever it was opened', async () => {
    await page.click('#breadcrumbs a:text-is("Home")')
    await page.click('#folders a:text-is("Projects")')
    await page.click('#folders a:text-is("Project 2")')
    await page.locator('#breadcrumbs li:last-child').filter({ hasText: 'Project 2' }).waitFor()
    await itemNamed(page, 'Project 2').and(page.locator('[aria-current="page"]')).waitFor()
    assert.equal(await itemNamed(page, 'Projects').getAttribute('aria-expanded'), 'true')
    assert.equal(await page.locator('#tree [aria-current="page"]').count(), 1)
    // A click in the tree opens the folder in the listing.
    await itemNamed(page, 'Photos').click()
    await page.locator('#breadcrumbs li:last-child').filter({ hasText: 'Photos' }).waitFor()
    await itemNamed(page, 'Photos').and(page.locator('[aria-current="page"]')).waitFor()
  })

  it('a folder created, renamed, moved and deleted elsewhere shows without a reload', async () => {
    const projects = feed.folders.find((f) => f.id === PROJECTS)
    const music = feed.folders.find((f) => f.name === 'Music')
    assert.ok(projects !== undefined && music !== undefined)
    const created = { ...folder(1, 'Brand new', null), owner: projects.owner }
    feed.push(upsert(created))
    await itemNamed(page, 'Brand new').waitFor({ timeout: LIVE_MS })
    feed.push(upsert({ ...music, name: 'Music renamed' }))
    await itemNamed(page, 'Music renamed').waitFor({ timeout: LIVE_MS })
    // Projects is expanded (an ancestor of a folder opened before): moved in, it shows at level 2.
    feed.push(upsert({ ...created, folder_id: projects.id }, null))
    await itemNamed(page, 'Brand new').and(page.locator('[aria-level="2"]')).waitFor({ timeout: LIVE_MS })
    feed.push({ type: 'remove', id: music.id, folder_id: null })
    await itemNamed(page, 'Music renamed').waitFor({ state: 'detached', timeout: LIVE_MS })
  })

  it('axe-core: no serious or critical violation with the pane, expanded, wide and on a phone', async () => {
    assert.deepEqual(await seriousAxeViolations(page), [])
    await page.setViewportSize({ width: 390, height: 844 })
    const pane = await page.locator('#tree-pane').boundingBox()
    const listing = await page.locator('#browser').boundingBox()
    assert.ok(pane !== null && listing !== null && pane.y >= listing.y + listing.height, 'below the listing')
    assert.deepEqual(await seriousAxeViolations(page), [])
    await page.setViewportSize({ width: 1280, height: 800 })
    const wide = await page.locator('#tree-pane').boundingBox()
    const list = await page.locator('#browser').boundingBox()
    assert.ok(wide !== null && list !== null && wide.x + wide.width <= list.x, 'the left column')
    assert.ok(Math.abs(wide.y - list.y) < 50, `beside the listing's top: ${wide.y} and ${list.y}`)
  })

  it('no CSP violation or script error', () => {
    assert.deepEqual(
      errors.filter((text) => !/status of (401|403|404|410|503)/.test(text)),
      [],
    )
  })
})

describe('tree pane, 10,000 folders', { skip: NO_CHROMIUM || sqlite?.skip }, () => {
  let served: ServedBackend
  let page: Page
  const errors: string[] = []

  before(async () => {
    if (sqlite === undefined) return
    served = await serveBackend(sqlite, (store) => seedDemo(store, Date.now()))
    const folders: Folder[] = []
    for (let i = 0; i < 100; i++) {
      const top = folder(1 + i * 101, `top ${String(i).padStart(3, '0')}`, null)
      folders.push(top)
      for (let j = 1; j <= 99; j++)
        folders.push(folder(1 + i * 101 + j, `child ${String(j).padStart(3, '0')}`, top.id))
    }
    page = await openPage(served, new ScriptedTree(folders), errors)
  })
  after(async () => {
    await page?.context().close()
    await served?.close()
  })

  it('holds only the expanded rows in the DOM and stays responsive', async () => {
    assert.equal(await items(page).count(), 100)
    const started = Date.now()
    await itemNamed(page, 'top 007').focus()
    await page.keyboard.press('ArrowRight')
    await itemNamed(page, 'child 099').waitFor()
    await page.keyboard.press('ArrowRight')
    await page.keyboard.press('ArrowDown')
    assert.equal(await focusedItem(page), 'child 002')
    // Generous for a loaded machine: a key must not take seconds.
    assert.ok(Date.now() - started < 3_000, `${Date.now() - started} ms for three keys`)
    assert.equal(await items(page).count(), 100 + 99)
    assert.deepEqual(errors, [])
  })
})

/** Whether the service serves the tree feed itself (it is answered, not a 404 of an unknown path). */
async function servesTree(base: string): Promise<boolean> {
  const response = await fetch(`${base}/v1/folders/tree`, {
    headers: { cookie: `session_id=${DEMO_SESSION_ID}` },
  })
  await response.body?.cancel()
  return response.status === 200
}

for (const backend of allBackends()) {
  describe(
    `tree pane on ${backend.name}: the service's own tree feed`,
    { skip: NO_CHROMIUM || backend.skip },
    () => {
      let served: ServedBackend
      let page: Page | undefined
      const errors: string[] = []

      before(async () => {
        served = await serveBackend(backend, (store) => seedDemo(store, Date.now()))
      })
      after(async () => {
        await page?.context().close()
        await served?.close()
      })

      it('raw-SQL writes by another process show within seconds: created, renamed, moved, deleted', async (t) => {
        if (!(await servesTree(served.service.base)))
          return t.skip('this service has no GET /v1/folders/tree yet')
        page = await openPage(served, null, errors)
        await itemNamed(page, 'Projects').locator('.twisty').click()
        await itemNamed(page, 'Project 1').waitFor()
        const raw = await openRawSql(served.url)
        try {
          const id = randomUUID()
          await insertLiveFolder(raw, {
            id,
            name: 'From SQL',
            parent: null,
            owner: DEMO_USER_ID,
            at: Date.now(),
          })
          await itemNamed(page, 'From SQL').waitFor({ timeout: LIVE_MS })
          await raw.run(
            `UPDATE folders SET name = 'Renamed by SQL', updated_at = ${raw.time} WHERE id = ?`,
            Date.now(),
            id,
          )
          await itemNamed(page, 'Renamed by SQL').waitFor({ timeout: LIVE_MS })
          await raw.run(
            `UPDATE folders SET folder_id = ?, updated_at = ${raw.time} WHERE id = ?`,
            PROJECTS,
            Date.now(),
            id,
          )
          await itemNamed(page, 'Renamed by SQL')
            .and(page.locator('[aria-level="2"]'))
            .waitFor({ timeout: LIVE_MS })
          await raw.run(
            `UPDATE folders SET is_deleted = ${raw.true}, updated_at = ${raw.time} WHERE id = ?`,
            Date.now(),
            id,
          )
          await itemNamed(page, 'Renamed by SQL').waitFor({ state: 'detached', timeout: LIVE_MS })
        } finally {
          await raw.close()
        }
      })
    },
  )
}
