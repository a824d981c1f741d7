import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { describe, it } from 'node:test'
import { BROWSER_CSP } from '../../src/routes/browser.js'
import { ROOT } from '../helpers/processes/build.js'
import { startService, runCli } from '../helpers/processes/cli.js'
import { useSeededApp } from '../helpers/apps/operability-db.js'

/**
 * The folder browser's routes: `/` and its assets with the page's CSP, nothing else of
 * dist/ served, and FOLDER_BROWSER / --no-folder-browser turning it all off. The page
 * itself runs in Chromium in test/browser.
 */

const SERVED_MODULES = [
  'browser/main.js',
  'client/index.js',
  'api/paths.js',
  'api/limits.js',
  'schemas/problem-codes.js',
]

/** The relative import specifiers of a compiled module (static `import ... from '...'`). */
function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8')
  return [...source.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s*'([^']+)'/gm)].map((m) => m[1] ?? '')
}

describe('folder browser routes', () => {
  const ctx = useSeededApp({ folderBrowser: true })

  it('serves the page at / with a strict CSP and no inline script or style', async () => {
    const res = await ctx.app.inject({ url: '/' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8')
    assert.equal(res.headers['content-security-policy'], BROWSER_CSP)
    assert.doesNotMatch(BROWSER_CSP, /unsafe-inline|unsafe-eval|https?:/)
    assert.doesNotMatch(res.body, /<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i)
    for (const [, src] of res.body.matchAll(/(?:src|href)="([^"#]+)"/g)) {
      assert.match(src ?? '', /^\/assets\//, 'every asset comes from this origin')
    }
  })

  it("serves the page's whole module graph, which imports nothing but relative modules", async () => {
    const seen = new Set<string>()
    const pending = ['browser/main.js']
    while (pending.length > 0) {
      const module = pending.pop() ?? ''
      if (seen.has(module)) continue
      seen.add(module)
      const res = await ctx.app.inject({ url: `/assets/js/${module}` })
      assert.equal(res.statusCode, 200, module)
      assert.match(String(res.headers['content-type']), /^(text|application)\/javascript/, module)
      for (const specifier of importsOf(join(ROOT, 'dist', module))) {
        assert.match(
          specifier,
          /^\.\.?\//,
          `${module} imports '${specifier}': only relative modules load in a browser`,
        )
        pending.push(relative(join(ROOT, 'dist'), join(ROOT, 'dist', dirname(module), specifier)))
      }
    }
    for (const module of SERVED_MODULES) assert.ok(seen.has(module), module)
  })

  it('serves nothing else of dist/ and nothing outside web/', async () => {
    for (const url of [
      '/assets/js/cli/main.js',
      '/assets/js/config.js',
      '/assets/js/routes/browser.js',
      '/assets/js/schemas/folder.js',
      '/assets/js/client/index.js.map',
      '/assets/js/client/index.d.ts',
      '/assets/js/browser/../config.js',
      '/assets/js/browser/%2e%2e/config.js',
      '/assets/../package.json',
      '/assets/index.html',
    ]) {
      const res = await ctx.app.inject({ url })
      assert.ok([403, 404].includes(res.statusCode), `${url}: ${res.statusCode}`)
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8', url)
    }
    const css = await ctx.app.inject({ url: '/assets/browser.css' })
    assert.equal(css.statusCode, 200)
    assert.match(String(css.headers['content-type']), /^text\/css/)
  })
})

describe('folder browser switched off', () => {
  const ctx = useSeededApp({ folderBrowser: false })

  it('/ and the assets are 404 problems, the API is unchanged', async () => {
    for (const url of ['/', '/assets/browser.css', '/assets/js/browser/main.js']) {
      const res = await ctx.app.inject({ url })
      assert.equal(res.statusCode, 404, url)
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8', url)
    }
    assert.equal((await ctx.app.inject({ url: '/v1/folders' })).statusCode, 401)
  })

  it('FOLDER_BROWSER=off turns it off in a real serve process', async () => {
    const service = await startService(ctx.seeded.url, { FOLDER_BROWSER: 'off' })
    try {
      assert.equal((await fetch(`${service.base}/`)).status, 404)
      assert.equal((await fetch(`${service.base}/v1/folders`)).status, 401)
    } finally {
      await service.stop()
    }
  })

  it('`serve --help` documents the flag', async () => {
    const run = await runCli(['serve', '--help'])
    assert.equal(run.code, 0)
    assert.match(run.stdout, /--no-folder-browser/)
  })
})
