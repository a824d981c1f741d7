import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { folderListJson } from '../../src/http/folder-list-json.js'
import { listFoldersSchema } from '../../src/routes/folders.js'
import type { FolderListBody } from '../../src/schemas/folder.js'
import { schemaSerialiser, tricky } from './schema-serialiser.js'

/**
 * The listing's hand-written JSON (src/http/folder-list-json.ts) is the route's 200 schema
 * serialiser, byte for byte: any names (quotes, backslashes, control characters, lone
 * surrogates, astral characters), null or present avatars and parents, owners shared or
 * not, extra fields on every object (which neither may write). FC_SEED=<n> replays a failure.
 */

// Any UTF-16, and strings made mostly of what escaping decides on.
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
  const serialise = schemaSerialiser(listFoldersSchema.response)

  it('for arbitrary pages', async () => {
    let folders = 0
    await fc.assert(
      fc.asyncProperty(page, async (generated) => {
        const schemaText = await serialise(generated)
        folders += generated.folders.length
        assert.equal(folderListJson(generated as unknown as FolderListBody), schemaText)
      }),
      { numRuns: 300, seed: process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED) },
    )
    assert.ok(folders > 1000, `only ${folders} folders compared`)
  })
})
