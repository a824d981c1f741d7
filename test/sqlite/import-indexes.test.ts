import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { validateImport } from '../../src/import/validate-import.js'
import type { Store } from '../../src/store/store.js'
import { sqliteBackend } from '../helpers/databases/backends.js'
import { uuid } from '../helpers/fixtures/ids.js'

/**
 * A SQLite import that brings at least as many folders as the table holds drops the
 * folders' secondary indexes for the copy and builds them again: whichever way it goes,
 * the schema after an import (or a failed one) is the schema before it.
 */

const OWNER = uuid('d0000000', 1)
const now = Date.parse('2026-01-01T00:00:00.000Z')

const folders = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({
    id: uuid('d1000000', from + i),
    name: `f${from + i}`,
    owner_id: OWNER,
  }))

describe('SQLite import: the folders indexes', () => {
  let opened: Awaited<ReturnType<typeof sqliteBackend.open>>
  let store: Store
  const schema = () => {
    const db = new Database(opened.url.slice('sqlite:'.length), { readonly: true })
    try {
      return db
        .prepare(
          "SELECT type, name, sql FROM sqlite_master WHERE tbl_name IN ('folders', 'files') ORDER BY name",
        )
        .all()
    } finally {
      db.close()
    }
  }

  before(async () => {
    opened = await sqliteBackend.open()
    store = opened.store
    await store.importData(validateImport({ users: [{ id: OWNER, username: 'indexes' }] }, now))
  })
  after(() => opened.cleanup())

  it('are the same after a large import, a small one and a failed one', async () => {
    const initial = schema()
    assert.ok(
      initial.some((row) => (row as { name: string }).name === 'folders_listing'),
      'the listing index exists',
    )
    await store.importData(validateImport({ folders: folders(0, 50) }, now))
    assert.deepEqual(schema(), initial, 'after an import into an empty table (indexes rebuilt)')
    await store.importData(validateImport({ folders: folders(50, 5) }, now))
    assert.deepEqual(schema(), initial, 'after a small import (indexes kept)')
    const clash = [...folders(100, 100), { id: uuid('d1000000', 0), name: 'again', owner_id: OWNER }]
    await assert.rejects(store.importData(validateImport({ folders: clash }, now)), /duplicate|already/)
    assert.deepEqual(schema(), initial, 'after a failed import')
    const listed = await store.listFolders({ ownerId: OWNER, parentId: null, page: 1, limit: 100 })
    assert.equal(listed?.total, 55)
  })
})
