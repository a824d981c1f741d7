import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'
import fastifyStatic from '@fastify/static'

/**
 * The folder browser: `/` is web/index.html, `/assets/` the rest of web/ (the stylesheet),
 * and `/assets/js/` the page's compiled ES modules from dist/ (the browser code and the
 * typed client it uses). Everything ships in the package, so the page works offline.
 *
 * Only the modules the page loads are served from dist/ (an allowlist, below): the server's
 * own compiled code is none of a browser's business.
 */

/** The repository (or installed package) root: routes/ sits two levels below it in src/ and dist/. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url))
const WEB_ROOT = `${PACKAGE_ROOT}web`
const DIST_ROOT = `${PACKAGE_ROOT}dist`

const BROWSER_ASSETS_PREFIX = '/assets/'
const BROWSER_MODULES_PREFIX = '/assets/js/'
/**
 * The module graph of the page: the browser code, the client, and what the client imports
 * (src/api's paths and bounds, the problem codes, and the listing orders it sorts a watched
 * listing by).
 */
const BROWSER_MODULE = /^\/(?:browser|client|ordering|api)\/[a-z0-9-]+\.js$|^\/schemas\/problem-codes\.js$/

/**
 * Scripts, styles and fetches from this origin only; no inline script or style, no plugins,
 * no framing, no form posts (sign-in is handled by the page's script), and DOM sinks locked
 * by Trusted Types (the page builds its DOM with textContent and createElement only).
 */
export const BROWSER_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'"

export const browserRoutes: FastifyPluginAsync = async (app) => {
  // Read once: the page is small and never changes while the process runs.
  const indexHtml = readFileSync(`${WEB_ROOT}/index.html`, 'utf8')

  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('content-security-policy', BROWSER_CSP)
    done()
  })

  app.get('/', { schema: { hide: true } }, (_request, reply) =>
    reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(indexHtml),
  )

  await app.register(fastifyStatic, {
    root: DIST_ROOT,
    prefix: BROWSER_MODULES_PREFIX,
    index: false,
    cacheControl: true,
    maxAge: 0,
    allowedPath: (pathName) => BROWSER_MODULE.test(pathName),
  })
  await app.register(fastifyStatic, {
    root: WEB_ROOT,
    prefix: BROWSER_ASSETS_PREFIX,
    index: false,
    maxAge: 0,
    decorateReply: false,
    allowedPath: (pathName) => pathName !== '/index.html',
  })
}
