import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { chromium, type Browser } from 'playwright-core'
import { sqliteBackend } from '../helpers/databases/backends.js'
import { serveBackend, type ServedBackend } from '../helpers/apps/served-backend.js'

/**
 * The /docs page in a real headless Chromium (Debian's `chromium`): it shows the document
 * of /v1/openapi.json under the project's name, says how to authenticate, and breaks no
 * rule of its Content-Security-Policy (a violation is a console error).
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const NO_CHROMIUM = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (.ci/run installs it)`

/** Polls `condition` until it holds (at most 10 s). */
async function waitUntil(condition: () => boolean): Promise<void> {
  for (const started = Date.now(); !condition(); await new Promise((resolve) => setTimeout(resolve, 50))) {
    if (Date.now() - started > 10_000) assert.fail('timed out')
  }
}

describe('/docs in Chromium', { skip: NO_CHROMIUM }, () => {
  let browser: Browser | undefined
  let served: ServedBackend | undefined

  before(async () => {
    served = await serveBackend(sqliteBackend, async () => {})
    // Chromium's sandbox needs an unprivileged user; CI runs as root in a container.
    const args = process.getuid?.() === 0 ? ['--no-sandbox'] : []
    browser = await chromium.launch({ executablePath: CHROMIUM, args })
  })
  after(async () => {
    await browser?.close()
    await served?.close()
  })

  it('loads /v1/openapi.json, carries the project name, not the packages’, and logs no CSP violation', async () => {
    const base = served!.service.base
    const page = await browser!.newPage()
    const errors: string[] = []
    const documents: string[] = []
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text())
    })
    page.on('pageerror', (error) => errors.push(error.message))
    page.on('request', (request) => {
      if (/openapi\.json|\/docs\/(json|yaml)/.test(request.url()))
        documents.push(new URL(request.url()).pathname)
    })
    try {
      await page.goto(`${base}/docs`, { waitUntil: 'networkidle' })
      await page.waitForSelector('.opblock', { timeout: 20_000 })
      assert.deepEqual(documents, ['/v1/openapi.json'], 'one URL for the document')
      assert.equal(await page.title(), 'folder-service API')
      const logo = page.locator('.topbar img')
      assert.match((await logo.getAttribute('src')) ?? '', /^data:image\/svg\+xml;base64,/)
      const mark = Buffer.from(
        ((await logo.getAttribute('src')) ?? '').split(',')[1] ?? '',
        'base64',
      ).toString()
      assert.match(mark, /folder-service/)
      assert.doesNotMatch(mark, /fastify/i)
      const info = await page.locator('.information-container').innerText()
      assert.match(info, /sign in at\s+\/\s+\(the folder browser\) in this same browser/)
      assert.match(info, /curl --cookie 'session_id=/)
      assert.deepEqual(errors, [], 'no console error: no CSP violation, no failed load')
    } finally {
      await page.close()
    }
  })

  it('Try it out offers each order, sends what it shows, and goes back to none', async () => {
    const page = await browser!.newPage()
    const sent: string[] = []
    page.on('request', (request) => {
      const url = new URL(request.url())
      if (url.pathname === '/v1/folders') sent.push(url.search)
    })
    try {
      await page.goto(`${served!.service.base}/docs`, { waitUntil: 'networkidle' })
      const listing = page
        .locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: /^\/v1\/folders$/ }) })
        .first()
      await listing.locator('.opblock-summary').click()
      await listing.locator('button.try-out__btn').click()
      const row = listing.locator('tr[data-param-name="order"]')
      const order = row.locator('select')
      assert.deepEqual(await order.locator('option').allTextContents(), ['--', 'name', 'name_natural'])
      assert.equal(await order.inputValue(), '', 'nothing chosen, nothing sent')
      assert.doesNotMatch(await row.innerText(), /\|/, 'one type, not a union')
      await order.selectOption('name_natural')
      await listing.locator('button.execute').click()
      await waitUntil(() => sent.length === 1)
      await order.selectOption('--')
      await listing.locator('button.execute').click()
      await waitUntil(() => sent.length === 2)
      assert.match(sent[0] ?? '', /[?&]order=name_natural(&|$)/)
      assert.doesNotMatch(sent[1] ?? '', /order=/)
      const curl = await listing.locator('.curl-command').first().innerText()
      assert.ok(curl.includes(`'${served!.service.base}/v1/folders?`), curl)
      const info = await page.locator('.information-container').innerText()
      assert.doesNotMatch(info, /curl[^\n]*:3000/, 'no port written into the example')
    } finally {
      await page.close()
    }
  })

  it('the plugin’s own document addresses send to /v1/openapi.json', async () => {
    for (const path of ['/docs/json', '/docs/yaml']) {
      const res = await fetch(`${served!.service.base}${path}`, { redirect: 'manual' })
      assert.equal(res.status, 301, path)
      assert.equal(res.headers.get('location'), '/v1/openapi.json')
    }
  })
})
