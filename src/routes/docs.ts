import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { FastifyPluginAsync } from 'fastify'
import fastifySwaggerUi from '@fastify/swagger-ui'
import { staticAssets } from '../http/static-assets.js'

/**
 * The API's description: the generated OpenAPI document at /v1/openapi.json and a
 * human-readable page at /docs (Swagger UI, whose assets ship in @fastify/swagger-ui, so it
 * works offline). Needs the openapi plugin registered first. Neither route is in the document.
 */

export const OPENAPI_PATH = '/v1/openapi.json'
export const DOCS_PREFIX = '/docs'

/**
 * The API's own Content-Security-Policy forbids everything; the docs page loads its scripts,
 * styles, images (a data: logo) and the document from this origin only.
 */
export const DOCS_CSP =
  "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; " +
  "img-src 'self' data:; font-src 'self' data:; object-src 'none'; script-src 'self'; " +
  "script-src-attr 'none'; style-src 'self'"

export const docsRoutes: FastifyPluginAsync = async (app) => {
  app.get(OPENAPI_PATH, { schema: { hide: true } }, () => app.swagger())

  // Swagger UI's files (1.7 MB of script) from memory, compressed once, cacheable for a
  // week; its own file route (@fastify/static, from disk on every request) is the fallback.
  const swaggerUiFiles = join(
    dirname(createRequire(import.meta.url).resolve('@fastify/swagger-ui')),
    'static',
  )
  app.addHook('onRequest', staticAssets(`${DOCS_PREFIX}/static/`, swaggerUiFiles))

  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: DOCS_CSP,
    uiConfig: { deepLinking: true, defaultModelsExpandDepth: 1 },
  })
}
