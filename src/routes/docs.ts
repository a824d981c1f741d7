import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync } from 'fastify'
import fastifySwaggerUi from '@fastify/swagger-ui'
import { staticAssets } from '../http/static-assets.js'

/**
 * The API's description: the generated OpenAPI document at /v1/openapi.json and a
 * human-readable page at /docs (Swagger UI, whose assets ship in @fastify/swagger-ui, so it
 * works offline). Needs the openapi plugin registered first. Neither route is in the document.
 */

const OPENAPI_PATH = '/v1/openapi.json'
const DOCS_PREFIX = '/docs'

/**
 * The API's own Content-Security-Policy forbids everything; the docs page loads its scripts,
 * styles, images (the data: logo) and the document from this origin only. Swagger UI adds
 * one <style> element of its own at start-up: its hash (measured in Chromium, checked by
 * test/browser/docs-page.test.ts) allows that element and nothing else inline.
 */
const SWAGGER_UI_STYLE_HASH = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"
const DOCS_CSP =
  "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; " +
  "img-src 'self' data:; font-src 'self' data:; object-src 'none'; script-src 'self'; " +
  `script-src-attr 'none'; style-src 'self' ${SWAGGER_UI_STYLE_HASH}`

/** The project's mark in the page's top bar, in place of the package's own. */
const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="220" height="40" viewBox="0 0 220 40">
<path fill="#c08a1e" d="M2 8h12l5 5h17v23H2z"/>
<text x="44" y="28" font-family="sans-serif" font-size="20" fill="#fff">folder-service API</text>
</svg>`

const webFile = (name: string) => readFileSync(fileURLToPath(new URL(`../../web/${name}`, import.meta.url)))

export const docsRoutes: FastifyPluginAsync = async (app) => {
  app.get(OPENAPI_PATH, { schema: { hide: true } }, () => app.swagger())

  // Swagger UI's files (1.7 MB of script) from memory, compressed once, cacheable for a
  // week; its own file route (@fastify/static, from disk on every request) is the fallback.
  const swaggerUiFiles = join(
    dirname(createRequire(import.meta.url).resolve('@fastify/swagger-ui')),
    'static',
  )
  app.addHook('onRequest', staticAssets(`${DOCS_PREFIX}/static/`, swaggerUiFiles))
  // One address for the document: the plugin's own copies point there.
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?', 1)[0]
    if (path === `${DOCS_PREFIX}/json` || path === `${DOCS_PREFIX}/yaml`) {
      return reply.redirect(OPENAPI_PATH, 301)
    }
  })

  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: DOCS_CSP,
    logo: { type: 'image/svg+xml', content: LOGO_SVG, href: '/' },
    theme: {
      title: 'folder-service API',
      favicon: [
        {
          filename: 'favicon.svg',
          rel: 'icon',
          sizes: 'any',
          type: 'image/svg+xml',
          content: webFile('favicon.svg'),
        },
      ],
    },
    uiConfig: {
      deepLinking: true,
      defaultModelsExpandDepth: 1,
      // The initializer points Swagger UI at the plugin's ./json; `urls` wins over it.
      urls: [{ url: OPENAPI_PATH, name: 'folder-service' }],
      // Requests from "Try it out" carry the browser's cookies (the session from signing in at /).
      withCredentials: true,
    },
  })
}
