import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { folderTreeJson } from '../../src/http/folder-tree-json.js'
import { treeSchema } from '../../src/routes/tree.js'
import type { FolderTreeBody } from '../../src/schemas/tree-body.js'
import { schemaSerialiser, tricky } from './schema-serialiser.js'

/**
 * A tree answer's hand-written JSON (src/http/folder-tree-json.ts) is the route's 200 schema
 * serialiser, byte for byte: upsert (with and without previous_folder_id), remove and owner
 * entries in any mix, any names (quotes, backslashes, control characters, lone surrogates,
 * astral characters), null or present parents and avatars, owners shared or not. Entries
 * are valid for the schema, as the feed builds them: the serialiser picks an entry's branch
 * of the union by validating it, so an invalid one has no bytes to compare with.
 * FC_SEED=<n> replays a failure.
 */

// 1 to 255 characters, as the database holds names and usernames.
const text = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 120 }),
  fc.string({ unit: tricky, minLength: 1, maxLength: 3 }),
  fc.string({ unit: tricky, minLength: 1, maxLength: 60 }),
)
const parent = fc.option(fc.uuid(), { nil: null })
const timestamp = fc
  .date({
    min: new Date('1970-01-01T00:00:00.000Z'),
    max: new Date('9999-12-31T23:59:59.999Z'),
    noInvalidDate: true,
  })
  .map((d) => d.toISOString())
const owner = fc.record({ id: fc.uuid(), username: text, avatar_url: fc.option(text, { nil: null }) })
const folder = (owners: fc.Arbitrary<unknown>) =>
  fc.record({
    id: fc.uuid(),
    name: text,
    folder_id: parent,
    owner: owners,
    created_at: timestamp,
    updated_at: timestamp,
  })
const entry = (owners: fc.Arbitrary<unknown>) =>
  fc.oneof(
    fc.record({ type: fc.constant('upsert'), folder: folder(owners) }),
    fc.record({ type: fc.constant('upsert'), folder: folder(owners), previous_folder_id: parent }),
    fc.record({ type: fc.constant('remove'), id: fc.uuid(), folder_id: parent }),
    fc.record({ type: fc.constant('owner'), owner }),
  )
const answer = owner.chain((one) =>
  fc.record({
    changes: fc.array(entry(fc.oneof(fc.constant(one), owner)), { maxLength: 60 }),
    cursor: fc.stringMatching(/^[A-Za-z0-9_-]{1,256}$/),
    has_more: fc.boolean(),
  }),
)

describe('the tree JSON is the 200 schema serialiser, byte for byte', () => {
  const serialise = schemaSerialiser(treeSchema.response)

  it('for arbitrary answers', async () => {
    const seen = { upsert: 0, moved: 0, remove: 0, owner: 0 }
    await fc.assert(
      fc.asyncProperty(answer, async (generated) => {
        const schemaText = await serialise(generated)
        for (const e of generated.changes) {
          seen[e.type]++
          if ('previous_folder_id' in e) seen.moved++
        }
        assert.equal(folderTreeJson(generated as unknown as FolderTreeBody), schemaText)
      }),
      { numRuns: 300, seed: process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED) },
    )
    for (const [kind, count] of Object.entries(seen))
      assert.ok(count > 200, `only ${count} ${kind} entries compared`)
  })
})
