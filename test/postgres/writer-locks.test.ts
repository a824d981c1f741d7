import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { validateImport } from '../../src/import/validate-import.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { freshPostgresDatabase } from '../helpers/databases/postgres.js'

/**
 * What the triggers cost other writers (docs/operations.md "Other writers"): a write to a
 * user's folders updates that user's row (its listing generation) in the same transaction,
 * so writes of one user's folders serialise on that row, and two transactions that write
 * folders of two users in opposite orders deadlock even when they touch different folders.
 * Locking the users in id order first avoids it.
 */

const USER_A = uuid('d1000000', 1)
const USER_B = uuid('d1000000', 2)
const folderOf = (user: 'a' | 'b', n: number) => uuid(user === 'a' ? 'd1a00000' : 'd1b00000', n)
const url = process.env.TEST_DATABASE_URL

describe(
  'postgres: other writers and the user row',
  { skip: url ? false : 'TEST_DATABASE_URL is not set' },
  () => {
    let database: Awaited<ReturnType<typeof freshPostgresDatabase>>
    let first: pg.Client
    let second: pg.Client

    before(async () => {
      database = await freshPostgresDatabase(url ?? '')
      await database.store.importData(
        validateImport(
          {
            users: [
              { id: USER_A, username: 'a' },
              { id: USER_B, username: 'b' },
            ],
            folders: [1, 2].flatMap((n) => [
              { id: folderOf('a', n), name: `a${n}`, owner_id: USER_A },
              { id: folderOf('b', n), name: `b${n}`, owner_id: USER_B },
            ]),
          },
          Date.now(),
        ),
      )
      first = new pg.Client({ connectionString: database.url })
      second = new pg.Client({ connectionString: database.url })
      await first.connect()
      await second.connect()
    })
    after(async () => {
      await first?.end()
      await second?.end()
      await database?.cleanup()
    })

    const rename = (client: pg.Client, folder: string) =>
      client.query('UPDATE folders SET name = name || $2 WHERE id = $1', [folder, '.'])
    const settledCode = (result: PromiseSettledResult<unknown>) =>
      result.status === 'fulfilled'
        ? 'ok'
        : ((result.reason as { code?: string }).code ?? String(result.reason))

    it('two transactions writing different folders of two users in opposite orders deadlock', async () => {
      await first.query('BEGIN')
      await second.query('BEGIN')
      try {
        await rename(first, folderOf('a', 1)) // takes user A's row
        await rename(second, folderOf('b', 2)) // takes user B's row
        const outcomes = await Promise.allSettled([
          rename(first, folderOf('b', 1)),
          rename(second, folderOf('a', 2)),
        ])
        assert.deepEqual(
          outcomes.map(settledCode).sort(),
          ['40P01', 'ok'],
          'one is chosen as the deadlock victim',
        )
      } finally {
        await first.query('ROLLBACK')
        await second.query('ROLLBACK')
      }
    })

    it('locking the users in id order first makes the second wait instead, and both commit', async () => {
      const lockUsers = (client: pg.Client, ids: string[]) =>
        client.query('SELECT 1 FROM users WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE', [ids])
      await first.query('BEGIN')
      await second.query('BEGIN')
      try {
        await lockUsers(first, [USER_B, USER_A])
        await rename(first, folderOf('a', 1))
        let secondLocked = false
        // The same users, listed in another order: the ORDER BY locks them alike.
        const secondWork = lockUsers(second, [USER_A, USER_B]).then(async () => {
          secondLocked = true
          await rename(second, folderOf('b', 2))
          await rename(second, folderOf('a', 2))
        })
        await sleep(300)
        assert.equal(secondLocked, false, 'the second waits on the first one')
        await rename(first, folderOf('b', 1))
        await first.query('COMMIT')
        await secondWork
        await second.query('COMMIT')
      } catch (error) {
        await first.query('ROLLBACK')
        await second.query('ROLLBACK')
        throw error
      }
      const names = await first.query<{ name: string }>('SELECT name FROM folders ORDER BY name')
      assert.deepEqual(
        names.rows.map((row) => row.name),
        ['a1.', 'a2.', 'b1.', 'b2.'],
      )
    })
  },
)
