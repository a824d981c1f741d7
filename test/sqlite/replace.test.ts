import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { validateImport } from '../../src/import/validate-import.js'
import type { Store } from '../../src/store/store.js'
import { sqliteBackend } from '../helpers/databases/backends.js'
import { uuid } from '../helpers/fixtures/ids.js'

/**
 * SQLite's REPLACE conflict resolution deletes the conflicting row without firing delete
 * triggers (unless the writer's connection has recursive_triggers on, and other services'
 * connections will not), so the maintained counts, generations and change log would miss
 * the delete. Such writes are refused with a message naming the alternative; the upsert
 * (ON CONFLICT DO UPDATE) and OR IGNORE keep working and keep everything right. Every write
 * here is made by a plain second connection, as another service's would be.
 */

const OWNER = uuid('e5000000', 1)
const OTHER = uuid('e5000000', 2)
const PARENT = uuid('e5100000', 1)
const T0 = Date.parse('2026-05-01T10:00:00.000Z')
const CHILDREN = 100
const child = (i: number) => uuid('e5200000', i)

describe('sqlite: INSERT OR REPLACE and its neighbours, by another writer', () => {
  let opened: Awaited<ReturnType<typeof sqliteBackend.open>>
  let store: Store
  let raw: Database.Database

  /** Every id listed under `parent` by walking offset pages of 50, and the totals reported. */
  const walk = async (parent: string | null, owner = OWNER) => {
    const ids: string[] = []
    const totals = new Set<number>()
    for (let page = 1; ; page++) {
      const result = await store.listFolders({ ownerId: owner, parentId: parent, page, limit: 50 })
      assert.ok(result !== null)
      totals.add(result.total)
      if (result.folders.length === 0) return { ids, totals: [...totals] }
      ids.push(...result.folders.map((f) => f.id))
    }
  }
  /** The listing of `parent` is exact: the maintained total is the number of rows listed. */
  const assertExact = async (parent: string | null, expected: number, owner = OWNER) => {
    const { ids, totals } = await walk(parent, owner)
    assert.deepEqual(totals, [expected], 'total')
    assert.equal(ids.length, expected, 'rows listed')
    assert.equal(new Set(ids).size, expected, 'no row twice')
  }
  const generation = async (owner = OWNER) => (await store.ownerGenerations([owner])).get(owner)

  before(async () => {
    opened = await sqliteBackend.open()
    store = opened.store
    await store.importData(
      validateImport(
        {
          users: [
            { id: OWNER, username: 'owner' },
            { id: OTHER, username: 'other' },
          ],
          folders: [
            { id: PARENT, name: 'Parent', owner_id: OWNER },
            ...Array.from({ length: CHILDREN }, (_, i) => ({
              id: child(i),
              name: `child ${i}`,
              folder_id: PARENT,
              owner_id: OWNER,
            })),
          ],
        },
        T0,
      ),
    )
    raw = new Database(opened.url.slice('sqlite:'.length), { timeout: 5000 })
    raw.pragma('foreign_keys = ON')
  })
  after(async () => {
    raw.close()
    await opened.cleanup()
  })
  beforeEach(async () => {
    await assertExact(PARENT, CHILDREN)
  })

  const folderValues = (id: string, owner: string, parent: string | null, name: string) => [
    id,
    name,
    parent,
    owner,
    T0,
    T0 + 1,
  ]
  const FOLDER_INSERT = `INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
    VALUES (?, ?, ?, ?, 0, ?, ?)`

  it('refuses INSERT OR REPLACE of an existing folder, naming the upsert, and changes nothing', async () => {
    const before = await generation()
    assert.throws(
      () =>
        raw.prepare(`INSERT OR REPLACE ${FOLDER_INSERT}`).run(...folderValues(child(7), OWNER, PARENT, 'x')),
      /INSERT OR REPLACE.*refused.*ON CONFLICT \(id\) DO UPDATE/,
    )
    assert.throws(
      () => raw.prepare(`REPLACE ${FOLDER_INSERT}`).run(...folderValues(child(8), OWNER, PARENT, 'x')),
      /refused/,
    )
    assert.equal((await store.findFolder(child(7)))?.name, 'child 7')
    assert.equal(await generation(), before)
  })

  it('refuses a REPLACE that would move a folder to another owner', async () => {
    assert.throws(
      () =>
        raw
          .prepare(`INSERT OR REPLACE ${FOLDER_INSERT}`)
          .run(...folderValues(child(9), OTHER, null, 'moved')),
      /refused/,
    )
    await assertExact(null, 0, OTHER)
  })

  it('refuses INSERT OR REPLACE of an existing user (by id or by username); the root stays listed', async () => {
    raw
      .prepare(
        `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
         VALUES (?, 'root folder', NULL, ?, 0, ?, ?)`,
      )
      .run(uuid('e5300000', 1), OTHER, T0, T0)
    const user = `INTO users (id, username, is_suspended, created_at, updated_at) VALUES (?, ?, 0, ?, ?)`
    assert.throws(() => raw.prepare(`INSERT OR REPLACE ${user}`).run(OTHER, 'renamed', T0, T0), /refused/)
    assert.throws(
      () => raw.prepare(`INSERT OR REPLACE ${user}`).run(uuid('e5000000', 9), 'other', T0, T0),
      /refused/,
    )
    assert.equal((await store.findUser(OTHER))?.username, 'other')
    await assertExact(null, 1, OTHER)
  })

  it('refuses UPDATE OR REPLACE onto another row', async () => {
    assert.throws(
      () => raw.prepare('UPDATE OR REPLACE folders SET id = ? WHERE id = ?').run(child(1), child(2)),
      /refused/,
    )
    assert.throws(
      () => raw.prepare("UPDATE OR REPLACE users SET username = 'owner' WHERE id = ?").run(OTHER),
      /refused/,
    )
    assert.equal((await store.findUser(OWNER))?.username, 'owner')
  })

  it('keeps INSERT OR REPLACE of a new id working as an insert', async () => {
    const id = uuid('e5400000', 1)
    const before = await generation()
    raw.prepare(`INSERT OR REPLACE ${FOLDER_INSERT}`).run(...folderValues(id, OWNER, null, 'replaced in'))
    assert.ok((await walk(null)).ids.includes(id))
    assert.notEqual(await generation(), before)
    raw.prepare('DELETE FROM folders WHERE id = ?').run(id)
  })

  it('keeps the upsert (ON CONFLICT DO UPDATE) working, counted and logged', async () => {
    const at = await generation()
    raw
      .prepare(
        `INSERT ${FOLDER_INSERT}
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, updated_at = excluded.updated_at`,
      )
      .run(...folderValues(child(3), OWNER, PARENT, 'upserted'))
    assert.equal((await store.findFolder(child(3)))?.name, 'upserted')
    const changes = await store.readChanges({
      ownerId: OWNER,
      parentId: PARENT,
      after: { generation: at as number, row: Number.MAX_SAFE_INTEGER },
      limit: 10,
    })
    assert.equal(changes.outcome, 'changes')
    assert.deepEqual(
      changes.rows.map((row) => row.kind === 'folder' && [row.id, row.folder?.name]),
      [[child(3), 'upserted']],
    )
    // An upsert that moves the folder out keeps both counts right.
    raw
      .prepare(`INSERT ${FOLDER_INSERT} ON CONFLICT (id) DO UPDATE SET folder_id = excluded.folder_id`)
      .run(...folderValues(child(3), OWNER, null, 'upserted'))
    await assertExact(PARENT, CHILDREN - 1)
    raw.prepare('UPDATE folders SET folder_id = ? WHERE id = ?').run(PARENT, child(3))
  })

  it('keeps INSERT OR IGNORE working: an existing id is left alone, a new one is inserted and counted', async () => {
    const before = await generation()
    raw.prepare(`INSERT OR IGNORE ${FOLDER_INSERT}`).run(...folderValues(child(4), OWNER, PARENT, 'ignored'))
    assert.equal((await store.findFolder(child(4)))?.name, 'child 4')
    assert.equal(await generation(), before)
    const id = uuid('e5400000', 2)
    raw.prepare(`INSERT OR IGNORE ${FOLDER_INSERT}`).run(...folderValues(id, OWNER, PARENT, 'new'))
    await assertExact(PARENT, CHILDREN + 1)
    raw.prepare('DELETE FROM folders WHERE id = ?').run(id)
    // The id ignored above, deleted and inserted again: not mistaken for a replace.
    raw.prepare('DELETE FROM folders WHERE id = ?').run(child(4))
    raw.prepare(`INSERT ${FOLDER_INSERT}`).run(...folderValues(child(4), OWNER, PARENT, 'child 4'))
    await assertExact(PARENT, CHILDREN)
  })
})
