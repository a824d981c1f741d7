import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { listingBackends, throughPooler } from '../helpers/databases/backends.js'
import { listBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { insertLiveFolder, type RawSql } from '../../harness/raw-sql.js'
import { ALICE, BOB, ALICE_SESSION, BOB_SESSION, usersAndSessions } from '../helpers/fixtures/users.js'

/**
 * Listings are cached under the owner's listing generation, which only the database keeps.
 * Each test here primes the cache, writes with plain SQL through a second connection (no
 * Store, no service code: as another service or a console would), and lists again at once:
 * the answer must show the write. A guard test first proves the cache is really answering,
 * so these tests cannot pass by reading the database every time.
 */

const DOCS = uuid('9e100000', 1)
const MUSIC = uuid('9e100000', 2)
const LONE = uuid('9e100000', 3)
const T0 = Date.parse('2026-05-01T10:00:00.000Z')

for (const backend of throughPooler(listingBackends())) {
  describe(
    `${backend.name}: listing generations keep the cache right under raw SQL writes`,
    { skip: backend.skip },
    () => {
      let target: Awaited<ReturnType<typeof appWithRawSql>>
      let app: FastifyInstance
      let sql: RawSql
      let reads: () => number
      let n = 0

      const list = async (session: string, parent: string | null) => {
        const res = await request(app, {
          session,
          query: parent === null ? 'limit=100' : `folder_id=${parent}&limit=100`,
        })
        assert.equal(res.statusCode, 200, res.body)
        return listBody(res)
      }
      const names = async (session: string, parent: string | null) =>
        (await list(session, parent)).folders.map((f) => f.name)
      /** Lists twice, so the answer is certainly in the cache before the write. */
      const primed = async (session: string, parent: string | null) => {
        await list(session, parent)
        return list(session, parent)
      }
      const insertFolder = (id: string, name: string, parent: string | null, owner: string) =>
        insertLiveFolder(sql, { id, name, parent, owner, at: T0 })

      before(async () => {
        target = await appWithRawSql(
          backend,
          {
            ...usersAndSessions('alice', 'bob'),
            folders: [
              { id: DOCS, name: 'Docs', owner_id: ALICE, created_at: '2026-05-01T10:00:00Z' },
              { id: MUSIC, name: 'Music', owner_id: ALICE, created_at: '2026-05-01T10:00:00Z' },
              { id: LONE, name: 'Lone', owner_id: ALICE, created_at: '2026-05-01T10:00:00Z' },
            ],
          },
          T0,
        )
        ;({ app, reads, sql } = target)
      })
      after(() => target.close())
      beforeEach(() => {
        n++
      })

      it('answers a repeated listing from the cache (the guard for every test below)', async () => {
        await list(ALICE_SESSION, null)
        const before = reads()
        const again = await list(ALICE_SESSION, null)
        assert.equal(reads(), before, 'the second identical listing must not read the database')
        assert.deepEqual(
          again.folders.map((f) => f.name),
          ['Docs', 'Lone', 'Music'],
        )
      })

      it('shows a folder inserted by plain SQL', async () => {
        await primed(ALICE_SESSION, DOCS)
        await insertFolder(uuid('9e200000', n), 'inserted', DOCS, ALICE)
        assert.deepEqual(await names(ALICE_SESSION, DOCS), ['inserted'])
      })

      it('shows a rename', async () => {
        await primed(ALICE_SESSION, null)
        await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'Audio', MUSIC)
        assert.deepEqual(await names(ALICE_SESSION, null), ['Audio', 'Docs', 'Lone'])
      })

      it('shows a folder marked deleted, then undeleted', async () => {
        await primed(ALICE_SESSION, null)
        await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, MUSIC)
        const gone = await list(ALICE_SESSION, null)
        assert.deepEqual(
          gone.folders.map((f) => f.id),
          [DOCS, LONE],
        )
        assert.equal(gone.total, 2)
        await sql.run(`UPDATE folders SET is_deleted = ${sql.false} WHERE id = ?`, MUSIC)
        assert.equal((await list(ALICE_SESSION, null)).total, 3)
      })

      it('shows a move between parents in both listings', async () => {
        const child = uuid('9e300000', 1)
        await insertFolder(child, 'mover', DOCS, ALICE)
        await primed(ALICE_SESSION, DOCS)
        await primed(ALICE_SESSION, MUSIC)
        await sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', MUSIC, child)
        assert.ok(!(await names(ALICE_SESSION, DOCS)).includes('mover'))
        assert.deepEqual(await names(ALICE_SESSION, MUSIC), ['mover'])
      })

      it('shows new timestamps', async () => {
        await primed(ALICE_SESSION, null)
        const later = T0 + 86_400_000
        await sql.run(
          `UPDATE folders SET created_at = ${sql.time}, updated_at = ${sql.time} WHERE id = ?`,
          later,
          later,
          DOCS,
        )
        const docs = (await list(ALICE_SESSION, null)).folders.find((f) => f.id === DOCS)
        assert.equal(docs?.created_at, new Date(later).toISOString())
        assert.equal(docs?.updated_at, new Date(later).toISOString())
      })

      it('shows a row deleted outright', async () => {
        const doomed = uuid('9e400000', 1)
        await insertFolder(doomed, 'doomed', LONE, ALICE)
        assert.deepEqual(
          (await primed(ALICE_SESSION, LONE)).folders.map((f) => f.name),
          ['doomed'],
        )
        await sql.run('DELETE FROM folders WHERE id = ?', doomed)
        assert.deepEqual(await names(ALICE_SESSION, LONE), [])
      })

      it("shows a change of owner in both owners' listings", async () => {
        const gift = uuid('9e500000', 1)
        await insertFolder(gift, 'gift', null, ALICE)
        await primed(ALICE_SESSION, null)
        await primed(BOB_SESSION, null)
        await sql.run('UPDATE folders SET owner_id = ? WHERE id = ?', BOB, gift)
        assert.ok(!(await names(ALICE_SESSION, null)).includes('gift'))
        const bobs = await list(BOB_SESSION, null)
        assert.deepEqual(
          bobs.folders.map((f) => [f.name, f.owner.username]),
          [['gift', 'bob']],
        )
      })

      it('shows a new username and a new avatar in the owner object', async () => {
        await primed(ALICE_SESSION, null)
        await sql.run('UPDATE users SET username = ? WHERE id = ?', 'alice2', ALICE)
        assert.ok((await list(ALICE_SESSION, null)).folders.every((f) => f.owner.username === 'alice2'))
        await sql.run('UPDATE users SET avatar_url = ? WHERE id = ?', 'https://example.org/a.png', ALICE)
        assert.ok(
          (await list(ALICE_SESSION, null)).folders.every(
            (f) => f.owner.avatar_url === 'https://example.org/a.png',
          ),
        )
      })

      it("does not let one owner's write cost another owner's cached answers", async () => {
        await primed(BOB_SESSION, null)
        await insertFolder(uuid('9e600000', 1), 'unrelated', DOCS, ALICE)
        const before = reads()
        await list(BOB_SESSION, null)
        assert.equal(reads(), before, "bob's listing is still cached after alice's write")
      })
    },
  )
}
