import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { allBackends, throughPooler } from '../helpers/databases/backends.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'

/**
 * What migration 010 adds to the change log for the folder tree (docs/api.md "Change log"):
 * each logged place says which side of the change it describes, 0 the folder's old state and
 * 1 a new place it was not in before (inserted, moved, given away, undeleted). So the log
 * tells an undelete from a rename, and a move's old parent from its new one. Every write is
 * plain SQL on a second connection, as another writer's would be.
 */

for (const backend of throughPooler(allBackends())) {
  describe(`${backend.name}: the tree log's sides of a change`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let sql: RawSql
    // SQLite numbers a generation's rows by their side; PostgreSQL keeps it in `place`.
    const PLACE = backend.name === 'sqlite' ? 'id' : 'place'
    const [alice, bob] = [randomUUID(), randomUUID()]

    before(async () => {
      opened = await backend.open()
      sql = await openRawSql(opened.url)
      for (const [id, name] of [
        [alice, 'alice'],
        [bob, 'bob'],
      ] as const) {
        await sql.run(
          `INSERT INTO users (id, username, is_suspended, created_at, updated_at)
           VALUES (?, ?, ${sql.false}, ${sql.time}, ${sql.time})`,
          id,
          name,
          Date.now(),
          Date.now(),
        )
      }
    })
    after(async () => {
      await sql?.close()
      await opened?.cleanup()
    })

    const folder = async (parent: string | null, name = 'f') => {
      const id = randomUUID()
      await insertLiveFolder(sql, { id, name, parent, owner: alice, at: Date.now() })
      return id
    }
    // Generations are per owner (and follow each one's clock): rows after a write are those
    // above both owners' generations before it.
    const latest = async () => [
      await sql.value('SELECT listing_generation FROM users WHERE id = ?', alice),
      await sql.value('SELECT listing_generation FROM users WHERE id = ?', bob),
    ]
    const AFTER = '((owner_id = ? AND generation > ?) OR (owner_id = ? AND generation > ?))'
    const afterGenerations = (since: number[]) => [alice, since[0], bob, since[1]]

    /** After `write`, the log holds exactly `sides` for `id`: [owner, parent, side] each. */
    async function logs(
      write: () => Promise<unknown>,
      id: string,
      sides: [owner: string, parent: string | null, side: 0 | 1][],
    ) {
      const since = await latest()
      await write()
      const rows = `FROM folder_changes WHERE kind = 'folder' AND folder_id = ? AND ${AFTER}`
      assert.equal(
        await sql.value(`SELECT count(*) ${rows}`, id, ...afterGenerations(since)),
        sides.length,
        'rows logged',
      )
      for (const [owner, parent, side] of sides) {
        const n = await sql.value(
          `SELECT count(*) ${rows} AND owner_id = ? AND parent_id IS NOT DISTINCT FROM ? AND ${PLACE} = ?`,
          id,
          ...afterGenerations(since),
          owner,
          parent,
          side,
        )
        assert.equal(n, 1, `a row of side ${side} at ${parent ?? 'the root'}`)
      }
    }

    it('an insert: its new place', async () => {
      const parent = await folder(null)
      const since = await latest()
      const id = randomUUID()
      await insertLiveFolder(sql, { id, name: 'new', parent, owner: alice, at: Date.now() })
      const n = await sql.value(
        `SELECT count(*) FROM folder_changes WHERE folder_id = ? AND ${AFTER} AND parent_id = ? AND ${PLACE} = 1`,
        id,
        ...afterGenerations(since),
        parent,
      )
      assert.equal(n, 1)
    })

    it('a rename or a deletion: the old state only', async () => {
      const parent = await folder(null)
      const id = await folder(parent)
      await logs(() => sql.run('UPDATE folders SET name = ? WHERE id = ?', 'renamed', id), id, [
        [alice, parent, 0],
      ])
      await logs(() => sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, id), id, [
        [alice, parent, 0],
      ])
      await logs(() => sql.run(`UPDATE folders SET name = ? WHERE id = ?`, 'renamed while deleted', id), id, [
        [alice, parent, 0],
      ])
    })

    it('an undelete: the old state and the place it comes back to', async () => {
      const parent = await folder(null)
      const id = await folder(parent)
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, id)
      await logs(() => sql.run(`UPDATE folders SET is_deleted = ${sql.false} WHERE id = ?`, id), id, [
        [alice, parent, 0],
        [alice, parent, 1],
      ])
    })

    it('a move: the old parent as the old side, the new parent as the new', async () => {
      const [from, to] = [await folder(null), await folder(null)]
      const id = await folder(from)
      await logs(() => sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', to, id), id, [
        [alice, from, 0],
        [alice, to, 1],
      ])
      await logs(() => sql.run('UPDATE folders SET folder_id = NULL WHERE id = ?', id), id, [
        [alice, to, 0],
        [alice, null, 1],
      ])
    })

    it('a folder given to another user: the old owner as the old side, the new as the new', async () => {
      const id = await folder(null)
      await logs(() => sql.run('UPDATE folders SET owner_id = ? WHERE id = ?', bob, id), id, [
        [alice, null, 0],
        [bob, null, 1],
      ])
    })

    it('a row deleted outright: the old state', async () => {
      const id = await folder(null)
      await logs(() => sql.run('DELETE FROM folders WHERE id = ?', id), id, [[alice, null, 0]])
    })

    it('one statement undeleting some folders and renaming others: the new side for the undeleted only', async () => {
      const parent = await folder(null)
      const [gone, live] = [await folder(parent, 'gone'), await folder(parent, 'live')]
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, gone)
      const since = await latest()
      await sql.run(
        `UPDATE folders SET is_deleted = ${sql.false}, name = name || '!' WHERE id IN (?, ?)`,
        gone,
        live,
      )
      const sideOf = (id: string, side: number) =>
        sql.value(
          `SELECT count(*) FROM folder_changes WHERE folder_id = ? AND ${AFTER} AND ${PLACE} = ?`,
          id,
          ...afterGenerations(since),
          side,
        )
      assert.deepEqual(
        [await sideOf(gone, 0), await sideOf(gone, 1), await sideOf(live, 0), await sideOf(live, 1)],
        [1, 1, 1, 0],
      )
    })
  })
}
