import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { validateImport } from '../../src/import/validate-import.js'
import { ImportError, type Store } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'

/**
 * Names round-trip: whatever name a data file gives a folder (docs/api.md "Import format"; JSON may spell any
 * UTF-16 string, lone surrogates included, as "\ud800"), the import either refuses the
 * record or the listing returns exactly that name, trimmed, on every backend. A name that
 * is stored as something else would list differently on SQLite and PostgreSQL (docs/api.md "Order"
 * wants one order on both) and no longer be the name its owner gave.
 */

const LONE_SURROGATES = ['\ud800', '\udbff', '\udc00', '\udfff']

/** Names of code points and, now and then, a lone surrogate half. */
const nameArb = fc
  .string({
    unit: fc.oneof(
      { weight: 8, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
      { weight: 1, arbitrary: fc.constantFrom(...LONE_SURROGATES) },
    ),
    minLength: 1,
    maxLength: 8,
  })
  .filter((s) => s.trim() !== '' && !s.includes('\u0000'))

for (const backend of allBackends()) {
  describe(`${backend.name}: folder names from a data file round-trip`, { skip: backend.skip }, () => {
    let store: Store
    let cleanup: () => Promise<void>
    before(async () => {
      const opened = await backend.open()
      store = opened.store
      cleanup = () => opened.cleanup()
    })
    after(async () => {
      await cleanup?.()
    })

    it('lists exactly the trimmed name given, or the import refuses it', async () => {
      let refused = 0
      let stored = 0
      await fc.assert(
        fc.asyncProperty(nameArb, async (raw) => {
          const owner = `${randomBytes(4).toString('hex')}-0000-4000-8000-000000000001`
          const doc = {
            users: [{ id: owner, username: `names-${owner}` }],
            folders: [{ name: raw, owner_id: owner }],
          }
          let data
          try {
            data = validateImport(doc, Date.now())
          } catch (error) {
            assert.ok(error instanceof ImportError, String(error))
            refused++
            return
          }
          await store.importData(data)
          const page = await store.listFolders({ ownerId: owner, parentId: null, page: 1, limit: 10 })
          const codes = (s: string) => [...s].map((c) => (c.codePointAt(0) ?? 0).toString(16))
          assert.deepEqual(
            page?.folders.map((f) => codes(f.name)),
            [codes(raw.trim())],
            `name ${JSON.stringify(raw)} was stored as something else`,
          )
          stored++
        }),
        { numRuns: 60, includeErrorInReport: true },
      )
      assert.equal(refused + stored, 60)
    })
  })
}
