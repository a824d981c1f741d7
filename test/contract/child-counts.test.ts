import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import type { Store } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { uuid } from '../helpers/fixtures/ids.js'

/**
 * `total` comes from counts the database maintains (migration 002 on both backends), not
 * from counting rows. These tests change the data every way the service can and check the
 * maintained total against the rows actually listed, page by page.
 */

const OWNER = uuid('c0000000', 1)
const PARENT = uuid('c0000000', 2)
const now = Date.parse('2026-01-01T00:00:00.000Z')

async function importFolders(store: Store, folders: object[]): Promise<void> {
  await store.importData(validateImport({ folders }, now))
}

/** Every id listed under the parent by walking all pages, and the totals reported. */
async function walk(store: Store, parentId: string | null, limit: number) {
  const ids: string[] = []
  const totals = new Set<number>()
  for (let page = 1; ; page++) {
    const result = await store.listFolders({ ownerId: OWNER, parentId, page, limit })
    assert.ok(result !== null)
    totals.add(result.total)
    if (result.folders.length === 0) break
    ids.push(...result.folders.map((f) => f.id))
  }
  return { ids, totals: [...totals] }
}

async function assertExact(store: Store, parentId: string | null, expected: number): Promise<void> {
  for (const limit of [1, 7, 100]) {
    const { ids, totals } = await walk(store, parentId, limit)
    assert.deepEqual(totals, [expected], `total with limit ${limit}`)
    assert.equal(ids.length, expected, `rows listed with limit ${limit}`)
    assert.equal(new Set(ids).size, expected, `no row twice with limit ${limit}`)
  }
}

for (const backend of allBackends()) {
  describe(`${backend.name}: maintained child counts`, { skip: backend.skip }, () => {
    let store: Store
    let opened: Awaited<ReturnType<typeof backend.open>>

    before(async () => {
      opened = await backend.open()
      store = opened.store
      await store.importData(validateImport({ users: [{ id: OWNER, username: 'counter' }] }, now))
      await importFolders(store, [
        { id: PARENT, name: 'Parent', owner_id: OWNER },
        ...Array.from({ length: 25 }, (_, i) => ({
          id: uuid('c1000000', i),
          name: `child ${i % 5}`,
          folder_id: PARENT,
          owner_id: OWNER,
          is_deleted: i % 10 === 9,
        })),
      ])
    })
    after(() => opened.cleanup())

    it('counts only live children after an import with deleted rows', async () => {
      await assertExact(store, PARENT, 23)
      await assertExact(store, null, 1)
    })

    it('follows a logical delete of a child and of a root folder', async () => {
      assert.equal(await store.markFolderDeleted(uuid('c1000000', 0), now + 1), true)
      await assertExact(store, PARENT, 22)
      const root = uuid('c2000000', 1)
      await importFolders(store, [{ id: root, name: 'Another root', owner_id: OWNER }])
      await assertExact(store, null, 2)
      await store.markFolderDeleted(root, now + 2)
      await assertExact(store, null, 1)
    })

    it('adds children imported later under a parent that already exists', async () => {
      await importFolders(
        store,
        Array.from({ length: 8 }, (_, i) => ({ name: `late ${i}`, folder_id: PARENT, owner_id: OWNER })),
      )
      await assertExact(store, PARENT, 30)
    })

    it('stays exact under concurrent writers', async () => {
      // Separate transactions racing on the same parent row (real concurrency on PostgreSQL).
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          importFolders(store, [{ name: `racer ${i}`, folder_id: PARENT, owner_id: OWNER }]),
        ),
      )
      await assertExact(store, PARENT, 42)
    })

    it('leaves the count untouched when an import fails', async () => {
      await assert.rejects(
        importFolders(store, [
          { name: 'would count', folder_id: PARENT, owner_id: OWNER },
          { name: 'orphan', folder_id: uuid('c9000000', 9), owner_id: OWNER },
        ]),
        /folders\[1\]/,
      )
      await assertExact(store, PARENT, 42)
    })
  })
}
