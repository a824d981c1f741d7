import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import Fastify, { type FastifyInstance } from 'fastify'
import { folderListJson } from '../../src/http/folder-list-json.js'
import { serializedText } from '../../src/http/serialized.js'
import { listFoldersSchema } from '../../src/routes/folders.js'
import type { FolderListBody } from '../../src/schemas/folder.js'
import { SHARED_SCHEMAS } from '../../src/schemas/shared-schemas.js'

/**
 * The listing's hand-written JSON (src/http/folder-list-json.ts) is the route's 200 schema
 * serialiser, byte for byte: any names (quotes, backslashes, control characters, lone
 * surrogates, astral characters), null or present avatars and parents, owners shared or
 * not, extra fields on every object (which neither may write). FC_SEED=<n> replays a failure.
 */

// Any UTF-16, and strings made mostly of what escaping decides on (each alone is a case).
const tricky = fc.constantFrom(
  '"',
  '\\',
  '\n',
  '\u0000',
  '\u001f',
  '\u007f',
  'a',
  'é',
  '\u2028',
  '\ud800',
  '\udc00',
  '😀',
)
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: tricky, maxLength: 3 }),
  fc.string({ unit: tricky, maxLength: 60 }),
)
const owner = fc.record({
  id: fc.uuid(),
  username: text,
  avatar_url: fc.option(text, { nil: null }),
  password_hash: text,
})
const folder = (shared: fc.Arbitrary<unknown>) =>
  fc.record({
    id: fc.uuid(),
    name: text,
    folder_id: fc.option(fc.uuid(), { nil: null }),
    owner: shared,
    created_at: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    updated_at: text,
    owner_id: fc.uuid(),
    is_deleted: fc.boolean(),
  })
const page = owner.chain((one) =>
  fc.record({
    folders: fc.array(folder(fc.oneof(fc.constant(one), owner)), { maxLength: 60 }),
    total: fc.nat(),
    page: fc.integer({ min: 1, max: 10_000 }),
    limit: fc.integer({ min: 1, max: 100 }),
    cursor: text,
  }),
)

describe('the listing JSON is the 200 schema serialiser, byte for byte', () => {
  let app: FastifyInstance
  let body: unknown
  let schemaText = ''

  before(async () => {
    app = Fastify()
    for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
    // The route's own response schemas: what the service's 200 serialiser is compiled from.
    app.get('/', { schema: { response: listFoldersSchema.response } }, (_request, reply) => {
      // The route's serialiser is read here; what the app answers does not matter.
      schemaText = serializedText(reply, body)
      return reply.send()
    })
    await app.ready()
  })
  after(() => app.close())

  it('for arbitrary pages', async () => {
    let folders = 0
    await fc.assert(
      fc.asyncProperty(page, async (generated) => {
        body = generated
        await app.inject({ url: '/' })
        folders += generated.folders.length
        assert.equal(folderListJson(generated as unknown as FolderListBody), schemaText)
      }),
      { numRuns: 300, seed: process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED) },
    )
    assert.ok(folders > 1000, `only ${folders} folders compared`)
  })
})
