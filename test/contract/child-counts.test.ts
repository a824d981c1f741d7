import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { validateImport } from '../../src/import/validate-import.js'
import type { Store } from '../../src/store/store.js'
import { openStore } from '../../src/store/open-store.js'
import { allBackends, TEST_SETTINGS } from '../helpers/databases/backends.js'
import { uuid } from '../helpers/fixtures/ids.js'

/**
 * `total` comes from counts the database maintains (migration 002 on both backends, owner-aware
 * on SQLite since 013), not from counting rows. These tests change the data every way the
 * service and other writers can and check the maintained total against the rows actually
 * listed, page by page.
 */

const OWNER = uuid('c0000000', 1)
const OTHER = uuid('c0000000', 3)
const PARENT = uuid('c0000000', 2)
const now = Date.parse('2026-01-01T00:00:00.000Z')

async function importFolders(store: Store, folders: object[]): Promise<void> {
  await store.importData(validateImport({ folders }, now))
}

/** Every id listed under the parent by walking all pages, and the totals reported. */
async function walk(store: Store, parentId: string | null, limit: number, ownerId: string) {
  const ids: string[] = []
  const totals = new Set<number>()
  for (let page = 1; ; page++) {
    const result = await store.listFolders({ ownerId, parentId, page, limit })
    assert.ok(result !== null)
    totals.add(result.total)
    if (result.folders.length === 0) break
    ids.push(...result.folders.map((f) => f.id))
  }
  return { ids, totals: [...totals] }
}

async function assertExact(
  store: Store,
  parentId: string | null,
  expected: number,
  ownerId = OWNER,
): Promise<void> {
  for (const limit of [1, 7, 100]) {
    const { ids, totals } = await walk(store, parentId, limit, ownerId)
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
      await store.importData(
        validateImport(
          {
            users: [
              { id: OWNER, username: 'counter' },
              { id: OTHER, username: 'receiver' },
            ],
          },
          now,
        ),
      )
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

    describe('owner changes by other writers', () => {
      let sql: RawSql
      const GIFT = uuid('c1000000', 1)
      const DELETED = uuid('c1000000', 9)
      const STRANGER = uuid('c3000000', 1)
      before(async () => {
        sql = await openRawSql(opened.url)
        // On SQLite, as the sqlite3 command line's default: a writer that does not enforce
        // foreign keys, so a child can end up with another owner than its parent.
        if (backend.name === 'sqlite') await sql.run('PRAGMA foreign_keys = OFF')
      })
      after(() => sql.close())

      /**
       * Runs a write that leaves a folder under a parent of another owner: SQLite's writer
       * above takes it; PostgreSQL's composite foreign key (folders_parent_same_owner)
       * refuses it, so there the counts must simply be unchanged.
       */
      async function crossOwner(statement: string, ...params: unknown[]): Promise<boolean> {
        if (backend.name === 'sqlite') {
          await sql.run(statement, ...params)
          return true
        }
        await assert.rejects(sql.run(statement, ...params), /folders_parent_same_owner/)
        return false
      }
      const give = (id: string, to: string) =>
        crossOwner('UPDATE folders SET owner_id = ? WHERE id = ?', to, id)

      it("counts a child given to another user in neither owner's listing", async () => {
        const taken = await give(GIFT, OTHER)
        await assertExact(store, PARENT, taken ? 41 : 42)
        await assertExact(store, null, 0, OTHER)
        if (taken) await give(GIFT, OWNER)
        await assertExact(store, PARENT, 42)
      })

      it("counts none of the parent's children for the user it is given to", async () => {
        const taken = await give(PARENT, OTHER)
        if (taken) {
          await assertExact(store, PARENT, 0, OTHER)
          await assertExact(store, null, 1, OTHER)
          await assertExact(store, null, 0)
          assert.equal(
            await store.listFolders({ ownerId: OWNER, parentId: PARENT, page: 1, limit: 10 }),
            null,
          )
        } else {
          await assertExact(store, PARENT, 42)
        }
        if (taken) await give(PARENT, OWNER)
        await assertExact(store, PARENT, 42)
        await assertExact(store, null, 1)
      })

      it('follows an undelete and a move across owners', async () => {
        const taken = await give(DELETED, OTHER)
        await sql.run(`UPDATE folders SET is_deleted = ${sql.false} WHERE id = ?`, DELETED)
        await assertExact(store, PARENT, taken ? 42 : 43)
        await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, DELETED)
        if (taken) await give(DELETED, OWNER)
        await assertExact(store, PARENT, 42)

        await insertLiveFolder(sql, { id: STRANGER, name: 'stranger', parent: null, owner: OTHER, at: now })
        await crossOwner('UPDATE folders SET folder_id = ? WHERE id = ?', PARENT, STRANGER)
        await assertExact(store, PARENT, 42)
        await sql.run('UPDATE folders SET folder_id = NULL WHERE id = ?', STRANGER)
        await assertExact(store, PARENT, 42)
        await assertExact(store, null, 1, OTHER)
      })

      it('moves the whole count with a folder given away together with its children', async () => {
        const subtree = 'UPDATE folders SET owner_id = ? WHERE id = ? OR folder_id = ?'
        await sql.run(subtree, OTHER, PARENT, PARENT)
        await assertExact(store, PARENT, 42, OTHER)
        await assertExact(store, null, 2, OTHER)
        await assertExact(store, null, 0)
        await sql.run(subtree, OWNER, PARENT, PARENT)
        await assertExact(store, PARENT, 42)
        await assertExact(store, null, 1)
      })

      it('counts the live children a parent row already has when it is inserted again', async () => {
        // A writer replacing a row: its columns of the data model copied aside, the row deleted
        // and inserted back in one transaction, its children untouched. PostgreSQL's foreign
        // key refuses the delete (children reference it).
        const COLUMNS = 'id, name, folder_id, owner_id, is_deleted, created_at, updated_at'
        await sql.run('CREATE TEMPORARY TABLE kept AS SELECT * FROM folders WHERE id = ?', PARENT)
        const replace = async () => {
          await sql.run('BEGIN')
          await sql.run('DELETE FROM folders WHERE id = ?', PARENT)
          await sql.run(`INSERT INTO folders (${COLUMNS}) SELECT ${COLUMNS} FROM kept`)
          await sql.run('COMMIT')
        }
        if (backend.name === 'sqlite') await replace()
        else {
          await assert.rejects(replace(), /foreign key/)
          await sql.run('ROLLBACK')
        }
        await sql.run('DROP TABLE kept')
        await assertExact(store, PARENT, 42)
        await assertExact(store, null, 1)
      })

      it("takes a new row's own count from its children, not from the writer", async () => {
        const id = uuid('c4000000', 1)
        await sql.run(
          `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at, child_count)
           VALUES (?, 'counted by hand', ?, ?, ${sql.false}, ${sql.time}, ${sql.time}, 7)`,
          id,
          PARENT,
          OWNER,
          now,
          now,
        )
        await assertExact(store, id, 0)
        await assertExact(store, PARENT, 43)
        await sql.run('DELETE FROM folders WHERE id = ?', id)
        await assertExact(store, PARENT, 42)
      })

      it('takes every count again when migration 013 runs on counts kept the old way', async () => {
        await sql.run('UPDATE folders SET child_count = 99 WHERE id = ?', PARENT)
        await sql.run("DELETE FROM schema_migrations WHERE name = '013-owner-child-counts'")
        const migrated = await openStore({ ...TEST_SETTINGS, databaseUrl: opened.url })
        await migrated.close()
        await assertExact(store, PARENT, 42)
      })
    })
  })
}
