import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Folder, OwnerInfo } from '../../src/schemas/folder.js'
import { ListFoldersQuery } from '../../src/schemas/list-folders-query.js'
import { StoreUnavailableError, type Store } from '../../src/store/store.js'
import {
  PROJECTS,
  sessionCookieHeaders,
  openSeeded,
  type Seeded,
  useSeededApp,
} from '../helpers/apps/operability-db.js'
import { ALICE_SESSION, FROZEN_SESSION, UNKNOWN_SESSION } from '../helpers/fixtures/users.js'
import { appOver } from '../helpers/apps/test-app.js'
import { failingStore } from '../helpers/apps/failing-store.js'

/** The OpenAPI document: valid 3.1, generated from the routes, and true of real responses. */

interface MediaType {
  schema: object
  examples?: Record<string, { summary: string; value: unknown }>
}
interface ResponseDoc {
  description: string
  headers?: Record<string, unknown>
  content?: Record<string, MediaType>
}
interface OperationDoc {
  operationId: string
  parameters: { name: string; in: string; required?: boolean; schema?: Record<string, unknown> }[]
  security: Record<string, string[]>[]
  responses: Record<string, ResponseDoc>
}
interface OpenApiDoc {
  openapi: string
  info: { title: string; description: string }
  servers: { url: string }[]
  paths: Record<string, Record<string, OperationDoc>>
  components: {
    schemas: Record<string, { properties: Record<string, unknown> }>
    securitySchemes: Record<string, unknown>
  }
}

const LIST = '/v1/folders'
const CHANGES = '/v1/folders/changes'
const TREE = '/v1/folders/tree'

describe('OpenAPI document', () => {
  let seeded: Seeded
  let app: FastifyInstance
  let doc: OpenApiDoc
  let operation: OperationDoc

  before(async () => {
    seeded = await openSeeded()
    app = await appOver(seeded.store, { rateLimitPerMinute: 1000 })
    const res = await app.inject('/v1/openapi.json')
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^application\/json/)
    doc = res.json<OpenApiDoc>()
    operation = doc.paths[LIST]?.get as OperationDoc
  })
  after(async () => {
    await app.close()
    await seeded.cleanup()
  })

  it('validates against the OpenAPI 3.1 schema', async () => {
    assert.equal(doc.openapi, '3.1.0')
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>)
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2))
  })

  it('describes the listing, its changes, the folder tree, health, readiness and metrics: docs and the 405 catch-all are hidden', () => {
    assert.deepEqual(
      Object.keys(doc.paths).sort(),
      ['/healthz', '/metrics', '/readyz', LIST, CHANGES, TREE].sort(),
    )
    for (const path of Object.keys(doc.paths)) assert.deepEqual(Object.keys(doc.paths[path] ?? {}), ['get'])
    assert.equal(operation.operationId, 'listFolders')
    assert.equal(doc.paths[CHANGES]?.get?.operationId, 'listFolderChanges')
    assert.equal(doc.paths[TREE]?.get?.operationId, 'followFolderTree')
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      assert.deepEqual(doc.paths[path]?.get?.security, [], `${path} needs no session`)
    }
  })

  it('names this instance as its server, and says how to authenticate before trying it out', () => {
    assert.deepEqual(
      doc.servers.map((server) => server.url),
      ['/'],
    )
    assert.match(doc.info.description, /sign in at `\/`/)
    assert.match(doc.info.description, /curl --cookie 'session_id=/)
    assert.equal(doc.info.title, 'folder-service')
  })

  it('declares page, limit and wait as integers with their bounds; the validator still refuses +1, 1e2, 0x10', async () => {
    const changes = doc.paths[CHANGES]?.get as OperationDoc
    const declared = (op: OperationDoc, name: string) => op.parameters.find((p) => p.name === name)?.schema
    const int32 = { type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647 }
    for (const [op, name, bounds] of [
      [operation, 'page', int32],
      [operation, 'limit', int32],
      [changes, 'limit', int32],
      [changes, 'wait', { ...int32, minimum: 0, maximum: 60 }],
    ] as const) {
      assert.deepEqual(
        Object.fromEntries(Object.keys(bounds).map((key) => [key, declared(op, name)?.[key]])),
        bounds,
        `${op.operationId} ${name}`,
      )
    }
    // The document's integer is how a client should send it; the validator, which sees the
    // text, keeps the contract's 400 for every other spelling of a number.
    for (const [path, name] of [
      [LIST, 'page'],
      [LIST, 'limit'],
      [CHANGES, 'limit'],
      [CHANGES, 'wait'],
    ] as const) {
      for (const value of ['+1', '1e2', '0x10', ' 1', '1.0', '']) {
        const res = await app.inject({
          url: `${path}?${name}=${encodeURIComponent(value)}`,
          headers: sessionCookieHeaders(ALICE_SESSION),
        })
        assert.equal(res.statusCode, 400, `${path} ${name}=${value}`)
        assert.match(res.json<{ detail: string }>().detail, new RegExp(`'${name}'`))
      }
    }
  })

  it('gives every documented body an example that matches its schema', () => {
    const ajv = new Ajv2020({ strict: false })
    addFormats.default(ajv)
    let examples = 0
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [status, response] of Object.entries(item.get?.responses ?? {})) {
        for (const [mediaType, media] of Object.entries(response.content ?? {})) {
          if (mediaType === 'text/plain') continue
          const named = Object.values(media.examples ?? {})
          assert.ok(named.length > 0, `${path} ${status} ${mediaType} has an example`)
          const validate = ajv.compile({ ...media.schema, components: doc.components })
          for (const { value } of named) {
            examples++
            assert.ok(validate(value), `${path} ${status}: ${JSON.stringify(validate.errors)}`)
          }
        }
      }
    }
    assert.ok(examples >= 20, `${examples} examples`)
  })

  it('the operations endpoints answer as documented', async () => {
    const ajv = new Ajv2020({ strict: false })
    for (const path of ['/healthz', '/readyz']) {
      const res = await app.inject(path)
      assert.equal(res.statusCode, 200)
      const schema = doc.paths[path]?.get?.responses['200']?.content?.['application/json']?.schema
      assert.ok(schema, path)
      assert.ok(ajv.compile(schema)(res.json()), `${path}: ${res.payload}`)
    }
    const metrics = await app.inject('/metrics')
    assert.equal(metrics.statusCode, 200)
    assert.match(String(metrics.headers['content-type']), /^text\/plain/)
    assert.ok(doc.paths['/metrics']?.get?.responses['200']?.content?.['text/plain'])
    assert.match(metrics.payload, /^# HELP /m, 'the text itself, not a JSON string')
  })

  it('is generated from the route schemas: its query parameters and component fields are the schemas’ own', () => {
    const query = operation.parameters.filter((p) => p.in === 'query')
    assert.deepEqual(
      query.map((p) => p.name),
      Object.keys(ListFoldersQuery.properties),
    )
    assert.ok(query.every((p) => p.required === false))
    assert.deepEqual(
      Object.keys(doc.components.schemas.Folder?.properties ?? {}),
      Object.keys(Folder.properties),
    )
    assert.deepEqual(
      Object.keys(doc.components.schemas.OwnerInfo?.properties ?? {}),
      Object.keys(OwnerInfo.properties),
    )
  })

  it('declares the session cookie security scheme, with how to get and send it, and requires it on the operation', () => {
    const scheme = doc.components.securitySchemes.sessionCookie as Record<string, string>
    assert.deepEqual(
      { type: scheme.type, in: scheme.in, name: scheme.name },
      { type: 'apiKey', in: 'cookie', name: 'session_id' },
    )
    assert.match(scheme.description ?? '', /curl --cookie 'session_id=/)
    assert.match(scheme.description ?? '', /signing in to the folder browser at `\/`/)
    assert.deepEqual(operation.security, [{ sessionCookie: [] }])
  })

  it('names the components and serves errors as application/problem+json', () => {
    assert.deepEqual(Object.keys(doc.components.schemas).sort(), [
      'Folder',
      'FolderChanges',
      'FolderList',
      'FolderTree',
      'OwnerChange',
      'OwnerInfo',
      'Problem',
      'RemoveChange',
      'TreeRemove',
      'TreeUpsert',
      'UpsertChange',
    ])
    const responses = operation.responses
    assert.deepEqual(Object.keys(responses), ['200', '304', '400', '401', '403', '404', '429', '500', '503'])
    const schemas = (response: ResponseDoc | undefined) =>
      Object.fromEntries(Object.entries(response?.content ?? {}).map(([type, media]) => [type, media.schema]))
    assert.deepEqual(schemas(responses['200']), {
      'application/json': { $ref: '#/components/schemas/FolderList' },
    })
    for (const status of ['400', '401', '403', '404', '429', '500', '503']) {
      assert.deepEqual(
        schemas(responses[status]),
        { 'application/problem+json': { $ref: '#/components/schemas/Problem' } },
        status,
      )
    }
    assert.equal(responses['304']?.content, undefined)
    assert.ok(responses['200']?.headers?.Link, 'the Link header is documented')
    assert.ok(responses['429']?.headers?.['Retry-After'], 'Retry-After is documented on 429')
  })

  it('documents the changes feed: its query, its body, 410 and no 304', () => {
    const changes = doc.paths[CHANGES]?.get as OperationDoc
    assert.deepEqual(
      changes.parameters.filter((p) => p.in === 'query').map((p) => p.name),
      ['folder_id', 'cursor', 'limit', 'wait'],
    )
    assert.deepEqual(Object.keys(changes.responses), [
      '200',
      '400',
      '401',
      '403',
      '404',
      '410',
      '429',
      '500',
      '503',
    ])
    assert.deepEqual(Object.keys(changes.responses['200']?.content ?? {}), [
      'application/json',
      'text/event-stream',
    ])
    assert.deepEqual(changes.responses['200']?.content?.['application/json']?.schema, {
      $ref: '#/components/schemas/FolderChanges',
    })
    assert.ok(changes.responses['200']?.headers?.['Cache-Control'])
    assert.deepEqual(changes.responses['410']?.content?.['application/problem+json']?.schema, {
      $ref: '#/components/schemas/Problem',
    })
  })

  describe('real responses match the schemas the document declares for them', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true })
    addFormats.default(ajv)

    /** Validates `res` against the document's schema for its status and media type. */
    const check = (res: LightMyRequestResponse): void => {
      const declared = operation.responses[String(res.statusCode)]
      assert.ok(declared, `status ${res.statusCode} is documented (body ${res.payload})`)
      const mediaType = String(res.headers['content-type']).split(';')[0] ?? ''
      const media = declared.content?.[mediaType]
      assert.ok(media, `${res.statusCode} is documented as ${mediaType}`)
      const validate = ajv.compile({ ...media.schema, components: doc.components })
      assert.ok(
        validate(res.json()),
        `${res.statusCode}: ${JSON.stringify(validate.errors)} for ${res.payload}`,
      )
      for (const name of Object.keys(declared.headers ?? {})) {
        // Sent only to an Origin that CORS_ORIGINS lists, which these requests do not carry.
        if (name === 'Access-Control-Allow-Origin') continue
        assert.ok(
          res.headers[name.toLowerCase()] !== undefined,
          `${res.statusCode} carries documented ${name}`,
        )
      }
    }
    const get = (a: FastifyInstance, query = '', session?: string) =>
      a.inject({
        url: `${LIST}${query}`,
        headers: session === undefined ? {} : sessionCookieHeaders(session),
      })

    it('200 at the root and under a folder', async () => {
      const root = await get(app, '', ALICE_SESSION)
      assert.equal(root.statusCode, 200)
      assert.ok(root.json<{ folders: unknown[] }>().folders.length > 0)
      check(root)
      const children = await get(app, `?folder_id=${PROJECTS}&limit=2`, ALICE_SESSION)
      assert.equal(children.statusCode, 200)
      check(children)
    })

    it('304 is documented and has no body', async () => {
      const first = await get(app, '', ALICE_SESSION)
      const res = await app.inject({
        url: LIST,
        headers: { ...sessionCookieHeaders(ALICE_SESSION), 'if-none-match': String(first.headers.etag) },
      })
      assert.equal(res.statusCode, 304)
      assert.equal(res.payload, '')
      assert.ok(operation.responses['304'])
    })

    it('400, 401, 403 and 404', async () => {
      const cases: [string, string | undefined, number][] = [
        ['?page=0', ALICE_SESSION, 400],
        ['', undefined, 401],
        ['', UNKNOWN_SESSION, 401],
        ['', FROZEN_SESSION, 403],
        [`?folder_id=${UNKNOWN_SESSION}`, ALICE_SESSION, 404],
      ]
      for (const [query, session, status] of cases) {
        const res = await get(app, query, session)
        assert.equal(res.statusCode, status, res.payload)
        check(res)
      }
    })

    it('429 when over the limit', async () => {
      const limited = await appOver(seeded.store, { rateLimitPerMinute: 1 })
      try {
        assert.equal((await get(limited, '', ALICE_SESSION)).statusCode, 200)
        const res = await get(limited, '', ALICE_SESSION)
        assert.equal(res.statusCode, 429)
        check(res)
      } finally {
        await limited.close()
      }
    })

    it('500 and 503 when the store fails', async () => {
      const unavailable: Store = Object.assign(Object.create(seeded.store) as Store, {
        listFolders: () => Promise.reject(new StoreUnavailableError('connection refused')),
      })
      for (const [store, status] of [
        [failingStore(seeded.store, ['findSessionUser']), 500],
        [unavailable, 503],
      ] as const) {
        const broken = await appOver(store)
        try {
          const res = await get(broken, '', ALICE_SESSION)
          assert.equal(res.statusCode, status)
          check(res)
        } finally {
          await broken.close()
        }
      }
    })

    it('changes: 200 (a fresh cursor, a remove), 400 and 404 match the document', async () => {
      const changes = doc.paths[CHANGES]?.get as OperationDoc
      const checkChanges = (res: LightMyRequestResponse) => {
        const media =
          changes.responses[String(res.statusCode)]?.content?.[
            String(res.headers['content-type']).split(';')[0] ?? ''
          ]
        assert.ok(media, `${res.statusCode} is documented: ${res.payload}`)
        const validate = ajv.compile({ ...media.schema, components: doc.components })
        assert.ok(
          validate(res.json()),
          `${res.statusCode}: ${JSON.stringify(validate.errors)} for ${res.payload}`,
        )
      }
      const ask = (query: string) =>
        app.inject({
          url: `${CHANGES}?folder_id=${PROJECTS}${query}`,
          headers: sessionCookieHeaders(ALICE_SESSION),
        })
      const start = await ask('')
      checkChanges(start)
      const folder = (
        await app.inject({
          url: `${LIST}?folder_id=${PROJECTS}`,
          headers: sessionCookieHeaders(ALICE_SESSION),
        })
      ).json<{
        folders: { id: string }[]
      }>().folders[0]
      assert.ok(folder)
      await seeded.store.markFolderDeleted(folder.id, Date.now())
      const answer = await ask(`&cursor=${start.json<{ cursor: string }>().cursor}`)
      assert.equal(answer.statusCode, 200)
      assert.deepEqual(answer.json<{ changes: unknown[] }>().changes, [{ type: 'remove', id: folder.id }])
      checkChanges(answer)
      checkChanges(await ask('&wait=99'))
      checkChanges(
        await app.inject({
          url: `${CHANGES}?folder_id=${UNKNOWN_SESSION}`,
          headers: sessionCookieHeaders(ALICE_SESSION),
        }),
      )
    })

    it('405 (an undocumented method) still has the Problem component’s shape', async () => {
      const res = await app.inject({
        method: 'DELETE',
        url: LIST,
        headers: sessionCookieHeaders(ALICE_SESSION),
      })
      assert.equal(res.statusCode, 405)
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8')
      const validate = ajv.compile({ $ref: '#/components/schemas/Problem', components: doc.components })
      assert.ok(validate(res.json()), JSON.stringify(validate.errors))
    })
  })
})

describe('/docs', () => {
  const ctx = useSeededApp()

  it('serves Swagger UI whose every asset loads from this server, and the same document', async () => {
    const page = await ctx.app.inject('/docs')
    assert.equal(page.statusCode, 200)
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
    assert.match(page.payload, /<div id="swagger-ui">/)
    assert.doesNotMatch(page.payload, /(src|href)="(https?:)?\/\//, 'no external asset')
    const assets = [...page.payload.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string)
    assert.ok(
      assets.some((a) => a.endsWith('swagger-ui-bundle.js')),
      assets.join(', '),
    )
    assert.ok(
      assets.some((a) => a.endsWith('swagger-ui.css')),
      assets.join(', '),
    )
    for (const asset of assets) {
      const res = await ctx.app.inject(asset)
      assert.equal(res.statusCode, 200, asset)
      assert.ok(res.rawPayload.length > 0, asset)
    }
    // One address for the document: the page asks for /v1/openapi.json (test/browser/docs-page.test.ts
    // watches it in Chromium), and the plugin's own address sends there.
    const initializer = await ctx.app.inject('/docs/static/swagger-initializer.js')
    assert.match(initializer.payload, /"urls":\[\{"url":"\/v1\/openapi\.json"/)
    const served = await ctx.app.inject('/docs/json')
    assert.equal(served.statusCode, 301)
    assert.equal(served.headers.location, '/v1/openapi.json')
  })

  it('relaxes the Content-Security-Policy for the docs only', async () => {
    const page = await ctx.app.inject('/docs')
    const docsCsp = String(page.headers['content-security-policy'])
    assert.match(docsCsp, /script-src 'self'/)
    assert.doesNotMatch(docsCsp, /https?:|unsafe-inline|unsafe-eval|unsafe-hashes/)
    const api = await ctx.app.inject({ url: LIST, headers: sessionCookieHeaders(ALICE_SESSION) })
    assert.equal(api.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'")
  })
})
