import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { validateImport } from '../../src/import/validate-import.js'
import { ALL_ROWS, type ChangePosition, type ChangeRow, type Store } from '../../src/store/store.js'
import { allBackends, throughPooler } from '../helpers/databases/backends.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { ALICE, BOB } from '../helpers/fixtures/users.js'

/**
 * The change log (folder_changes) as Store.readChanges reads it. Every write is made with
 * plain SQL on a second connection, as another service or a console would, so only the
 * database's triggers can put it in the log. Each test takes its own position first, so it
 * sees only its own writes.
 */

const DOCS = uuid('c4100000', 1)
const MUSIC = uuid('c4100000', 2)
const BOBS = uuid('c4100000', 3)
const T0 = Date.parse('2026-05-01T10:00:00.000Z')
const DAY = 86_400_000

/** A row as the tests compare it: kind, then what it says about the folder. */
function describeRow(row: ChangeRow): string {
  if (row.kind === 'owner') return 'owner'
  return row.folder === null ? `remove ${row.id}` : `upsert ${row.id} ${row.folder.name}`
}

function isBefore(a: ChangePosition, b: ChangePosition): boolean {
  return a.generation < b.generation || (a.generation === b.generation && a.row < b.row)
}

for (const backend of throughPooler(allBackends())) {
  describe(`${backend.name}: the change log under raw SQL writes`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let store: Store
    let sql: RawSql
    let n = 0

    const read = (owner: string, parent: string | null, position: ChangePosition | null, limit = 100) =>
      store.readChanges({ ownerId: owner, parentId: parent, after: position, limit })

    /** The present position of a feed: where a fresh cursor starts. */
    const present = async (owner: string, parent: string | null): Promise<ChangePosition> => {
      const result = await read(owner, parent, null)
      assert.equal(result.outcome, 'changes')
      assert.deepEqual(result.outcome === 'changes' && result.rows, [])
      return result.present
    }

    /** The changes after `position`, which must be valid; checks the result's invariants. */
    const changes = async (owner: string, parent: string | null, position: ChangePosition, limit = 100) => {
      const result = await read(owner, parent, position, limit)
      assert.equal(result.outcome, 'changes', JSON.stringify(result))
      let last = position
      for (const row of result.rows) {
        assert.ok(isBefore(last, row.position), 'rows follow the position in (generation, row) order')
        last = row.position
      }
      assert.ok(result.rows.length <= limit)
      const generation = (await store.ownerGenerations([owner])).get(owner)
      assert.deepEqual(
        result.present,
        { generation, row: ALL_ROWS },
        "present is the owner's current generation",
      )
      if (!result.more && result.rows.length > 0) {
        assert.equal(
          last.generation,
          result.present.generation,
          'the last row of a complete answer is the present',
        )
      }
      return result
    }

    const rowsAfter = async (owner: string, parent: string | null, position: ChangePosition) =>
      (await changes(owner, parent, position)).rows.map(describeRow)

    const folder = (name: string, parent: string | null, owner = ALICE) => {
      const id = uuid('c4200000', ++n)
      return { id, insert: () => insertLiveFolder(sql, { id, name, parent, owner, at: T0 }) }
    }

    before(async () => {
      opened = await backend.open()
      store = opened.store
      await store.importData(
        validateImport(
          {
            users: [
              { id: ALICE, username: 'alice' },
              { id: BOB, username: 'bob' },
            ],
            folders: [
              { id: DOCS, name: 'Docs', owner_id: ALICE },
              { id: MUSIC, name: 'Music', owner_id: ALICE },
              { id: BOBS, name: 'Bobs', owner_id: BOB },
            ],
          },
          T0,
        ),
      )
      sql = await openRawSql(opened.url)
    })
    after(async () => {
      await sql.close()
      await opened.cleanup()
    })
    beforeEach(() => {
      n += 10
    })

    it('starts a fresh cursor at the present generation, with no rows', async () => {
      const result = await read(ALICE, DOCS, null)
      assert.equal(result.outcome, 'changes')
      assert.deepEqual(result.rows, [])
      assert.equal(result.more, false)
      assert.deepEqual(result.owner, { id: ALICE, username: 'alice', avatar_url: null })
      assert.deepEqual(result.present, {
        generation: (await store.ownerGenerations([ALICE])).get(ALICE),
        row: ALL_ROWS,
      })
      // The present position is valid and nothing follows it.
      assert.deepEqual((await changes(ALICE, DOCS, result.present)).rows, [])
    })

    it('logs an insert with the folder as listed', async () => {
      const at = await present(ALICE, DOCS)
      const rootAt = await present(ALICE, null)
      const f = folder('inserted', DOCS)
      await f.insert()
      const ok = await changes(ALICE, DOCS, at)
      assert.equal(ok.rows.length, 1)
      assert.deepEqual(ok.rows[0], {
        kind: 'folder',
        position: ok.rows[0]?.position,
        id: f.id,
        folder: { id: f.id, name: 'inserted', folder_id: DOCS, created_at: T0, updated_at: T0 },
      })
      assert.deepEqual(await rowsAfter(ALICE, null, rootAt), [], 'the root is not concerned')
    })

    it('logs a rename, a delete flag and an undelete', async () => {
      const f = folder('before', DOCS)
      await f.insert()
      let at = await present(ALICE, DOCS)
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'after', f.id)
      assert.deepEqual(await rowsAfter(ALICE, DOCS, at), [`upsert ${f.id} after`])
      at = await present(ALICE, DOCS)
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, f.id)
      assert.deepEqual(await rowsAfter(ALICE, DOCS, at), [`remove ${f.id}`])
      at = await present(ALICE, DOCS)
      await sql.run(`UPDATE folders SET is_deleted = ${sql.false} WHERE id = ?`, f.id)
      // Its old state and the place it came back to (migration 010); one entry in an answer.
      assert.deepEqual(await rowsAfter(ALICE, DOCS, at), [`upsert ${f.id} after`, `upsert ${f.id} after`])
    })

    it('logs a move out of one parent and into another', async () => {
      const f = folder('mover', DOCS)
      await f.insert()
      const docsAt = await present(ALICE, DOCS)
      const musicAt = await present(ALICE, MUSIC)
      await sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', MUSIC, f.id)
      assert.deepEqual(await rowsAfter(ALICE, DOCS, docsAt), [`remove ${f.id}`])
      assert.deepEqual(await rowsAfter(ALICE, MUSIC, musicAt), [`upsert ${f.id} mover`])
    })

    it("logs an owner change in both owners' feeds, each at its own generation", async () => {
      const f = folder('gift', null)
      await f.insert()
      const aliceAt = await present(ALICE, null)
      const bobAt = await present(BOB, null)
      await sql.run('UPDATE folders SET owner_id = ? WHERE id = ?', BOB, f.id)
      assert.deepEqual(await rowsAfter(ALICE, null, aliceAt), [`remove ${f.id}`])
      const bobs = await changes(BOB, null, bobAt)
      assert.deepEqual(bobs.rows.map(describeRow), [`upsert ${f.id} gift`])
      assert.ok((bobs.rows[0]?.position.generation ?? 0) > bobAt.generation)
    })

    it('logs a row deleted outright', async () => {
      const f = folder('doomed', MUSIC)
      await f.insert()
      const at = await present(ALICE, MUSIC)
      await sql.run('DELETE FROM folders WHERE id = ?', f.id)
      assert.deepEqual(await rowsAfter(ALICE, MUSIC, at), [`remove ${f.id}`])
    })

    it('logs new timestamps with the new values', async () => {
      const f = folder('timed', MUSIC)
      await f.insert()
      const at = await present(ALICE, MUSIC)
      await sql.run(
        `UPDATE folders SET created_at = ${sql.time}, updated_at = ${sql.time} WHERE id = ?`,
        T0 + DAY,
        T0 + 2 * DAY,
        f.id,
      )
      const [row] = (await changes(ALICE, MUSIC, at)).rows
      assert.deepEqual(row?.kind === 'folder' && row.folder, {
        id: f.id,
        name: 'timed',
        folder_id: MUSIC,
        created_at: T0 + DAY,
        updated_at: T0 + 2 * DAY,
      })
    })

    it('logs nothing for an update that changes no listed column', async () => {
      const at = await present(ALICE, null)
      await sql.run('UPDATE folders SET name = name WHERE id = ?', DOCS)
      await sql.run(`UPDATE users SET is_suspended = ${sql.false} WHERE id = ?`, ALICE)
      assert.deepEqual(await rowsAfter(ALICE, null, at), [])
      assert.equal((await present(ALICE, null)).generation, at.generation)
    })

    it("logs a username and an avatar change as 'owner' rows in every feed of the owner", async () => {
      const rootAt = await present(ALICE, null)
      const docsAt = await present(ALICE, DOCS)
      await sql.run('UPDATE users SET username = ? WHERE id = ?', 'alice2', ALICE)
      await sql.run('UPDATE users SET avatar_url = ? WHERE id = ?', 'https://example.org/a.png', ALICE)
      for (const [parent, at] of [
        [null, rootAt],
        [DOCS, docsAt],
      ] as const) {
        const ok = await changes(ALICE, parent, at)
        assert.deepEqual(ok.rows.map(describeRow), ['owner', 'owner'])
        assert.deepEqual(ok.owner, { id: ALICE, username: 'alice2', avatar_url: 'https://example.org/a.png' })
      }
      const bobAt = await present(BOB, null)
      assert.deepEqual(await rowsAfter(BOB, null, bobAt), [], "another owner's feed is not concerned")
    })

    it('logs every row of a multi-row statement, and pages through them with `more`', async () => {
      const children = [folder('m1', DOCS), folder('m2', DOCS), folder('m3', DOCS)]
      for (const child of children) await child.insert()
      const at = await present(ALICE, DOCS)
      await sql.run(`UPDATE folders SET name = name || ' (x)' WHERE folder_id = ?`, DOCS)
      const all = await changes(ALICE, DOCS, at)
      assert.equal(all.more, false)
      const touched = all.rows.map((row) => (row.kind === 'folder' ? row.id : 'owner'))
      for (const child of children) assert.ok(touched.includes(child.id), child.id)
      assert.ok(all.rows.every((row) => row.kind === 'folder' && row.folder?.name.endsWith(' (x)')))
      // One at a time: each answer says whether more follow, and the walk ends at the present.
      const walked: ChangeRow[] = []
      let position = at
      for (;;) {
        const page = await changes(ALICE, DOCS, position, 1)
        walked.push(...page.rows)
        if (!page.more) break
        assert.equal(page.rows.length, 1)
        position = (page.rows[0] as ChangeRow).position
      }
      assert.deepEqual(walked, all.rows)
    })

    it('logs a statement writing the folders of two owners in both feeds', async () => {
      const aliceAt = await present(ALICE, null)
      const bobAt = await present(BOB, null)
      await sql.run(
        `UPDATE folders SET updated_at = ${sql.time} WHERE id IN (?, ?)`,
        T0 + 3 * DAY,
        DOCS,
        BOBS,
      )
      assert.deepEqual(await rowsAfter(ALICE, null, aliceAt), [`upsert ${DOCS} Docs`])
      assert.deepEqual(await rowsAfter(BOB, null, bobAt), [`upsert ${BOBS} Bobs`])
    })

    it('answers parent-not-found for a deleted, foreign or unknown parent, and an unknown owner', async () => {
      const gone = folder('gone', null)
      await gone.insert()
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, gone.id)
      const at = await present(ALICE, null)
      for (const parent of [gone.id, BOBS, uuid('c4f00000', 1), 'not-a-uuid']) {
        assert.deepEqual(await read(ALICE, parent, at), { outcome: 'parent-not-found' }, parent)
        assert.deepEqual(await read(ALICE, parent, null), { outcome: 'parent-not-found' }, parent)
      }
      assert.deepEqual(await read(uuid('c4f00000', 2), null, null), { outcome: 'parent-not-found' })
    })

    it("expires a position of another owner's history", async () => {
      // Generations are per owner and follow the clock (SQLite's to the millisecond): two
      // owners writing within one tick may share a value. Apart, they cannot.
      await sleep(3)
      await folder('for bob', null, BOB).insert()
      const bobs = await present(BOB, null)
      await sleep(3)
      await folder('for alice', null).insert()
      assert.deepEqual(await read(ALICE, null, bobs), { outcome: 'expired' })
      assert.deepEqual(await read(ALICE, null, { generation: bobs.generation + 7, row: ALL_ROWS }), {
        outcome: 'expired',
      })
    })

    it("expires a position from before an import that touched the owner (a 'reset')", async () => {
      const at = await present(ALICE, DOCS)
      const untouched = await present(BOB, null)
      await store.importData(
        validateImport({ folders: [{ name: 'imported', owner_id: ALICE, folder_id: DOCS }] }, T0),
      )
      assert.deepEqual(await read(ALICE, DOCS, at), { outcome: 'expired' })
      const now = await present(ALICE, DOCS)
      assert.ok(now.generation > at.generation)
      assert.deepEqual(await rowsAfter(ALICE, DOCS, now), [], 'the present after the import is valid')
      assert.deepEqual(await rowsAfter(BOB, null, untouched), [], 'an owner the import did not touch goes on')
    })

    it('gives a new user its first generation and a row for it, by SQL and by import', async () => {
      const carol = uuid('c4000000', 3)
      const dave = uuid('c4000000', 4)
      await sql.run(
        `INSERT INTO users (id, username, is_suspended, created_at, updated_at)
         VALUES (?, 'carol', ${sql.false}, ${sql.time}, ${sql.time})`,
        carol,
        T0,
        T0,
      )
      await store.importData(validateImport({ users: [{ id: dave, username: 'dave' }] }, T0))
      const generations = await store.ownerGenerations([carol, dave, uuid('c4f00000', 3)])
      assert.deepEqual([...generations.keys()].sort(), [carol, dave])
      // The first generation has a log row ('owner' by SQL, 'reset' by import, which is
      // no entry): a position there is valid.
      for (const [user, first] of [
        [carol, ['owner']],
        [dave, []],
      ] as const) {
        const generation = generations.get(user) as number
        assert.ok(generation > Date.now() * 1000 - 60 * DAY * 1000, 'a clock-based generation')
        assert.deepEqual(await rowsAfter(user, null, { generation, row: -1 }), first)
        assert.deepEqual(await rowsAfter(user, null, { generation, row: ALL_ROWS }), [])
      }
    })

    it('forgets the history of a deleted user, so one made again with the same id starts afresh', async () => {
      const erin = uuid('c4000000', 5)
      const insert = () =>
        sql.run(
          `INSERT INTO users (id, username, is_suspended, created_at, updated_at)
           VALUES (?, 'erin', ${sql.false}, ${sql.time}, ${sql.time})`,
          erin,
          T0,
          T0,
        )
      await insert()
      const at = await present(erin, null)
      await sql.run('DELETE FROM users WHERE id = ?', erin)
      await insert()
      assert.deepEqual(await read(erin, null, at), { outcome: 'expired' })
    })

    it("prunes old rows but never an owner's current generation, and expires pruned positions", async () => {
      const f = folder('pruned', MUSIC)
      await f.insert()
      const old = await present(ALICE, MUSIC)
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'pruned again', f.id)
      const current = await present(ALICE, MUSIC)
      const bobCurrent = await present(BOB, null)
      let deleted = 0
      for (let batch; (batch = await store.pruneChanges(Date.now() + DAY, 5)) > 0;) {
        assert.ok(batch <= 5, 'at most a batch at a time')
        deleted += batch
      }
      assert.ok(deleted > 0)
      assert.deepEqual(await read(ALICE, MUSIC, old), { outcome: 'expired' })
      assert.deepEqual(await rowsAfter(ALICE, MUSIC, current), [], "alice's current generation is kept")
      assert.deepEqual(await rowsAfter(BOB, null, bobCurrent), [], "idle bob's current generation is kept")
      // A bound in the past deletes nothing that is newer.
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'kept', f.id)
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'kept 2', f.id)
      assert.equal(await store.pruneChanges(Date.now() - DAY, 100), 0)
    })
  })
}
