import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres/postgres-store.js'
import { StoreUnavailableError, type ListFoldersQuery } from '../../src/store/store.js'
import { appOver, problemBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { freshPostgresDatabase, withAdminClient } from '../helpers/databases/postgres.js'

/**
 * A statement that waits for a lock (an import holds SHARE ROW EXCLUSIVE on the tables for
 * its whole run) until statement_timeout or lock_timeout cancels it is a timeout, not an
 * outage: 503 with words that say so, never "unreachable", and never a 500 (lock_timeout's
 * 55P03 was propagated as a statement fault).
 */

const OWNER = uuid('0c0c0000', 1)
const SESSION = uuid('0c0c5000', 1)
const ROOT: ListFoldersQuery = { ownerId: OWNER, parentId: null, page: 1, limit: 50 }
const url = process.env.TEST_DATABASE_URL

describe(
  'postgres: a lock wait that times out',
  { skip: url ? false : 'TEST_DATABASE_URL is not set' },
  () => {
    let database: Awaited<ReturnType<typeof freshPostgresDatabase>>
    before(async () => {
      database = await freshPostgresDatabase(url ?? '')
      await database.store.importData(
        validateImport(
          {
            users: [{ id: OWNER, username: 'locked-out' }],
            sessions: [{ id: SESSION, user_id: OWNER }],
            folders: [{ name: 'a', owner_id: OWNER }],
          },
          Date.now(),
        ),
      )
    })
    after(() => database.cleanup())

    /** `work` while another connection holds ACCESS EXCLUSIVE on folders. */
    const whileLocked = <T>(work: () => Promise<T>) =>
      withAdminClient(database.url, async (admin) => {
        await admin.query('BEGIN')
        await admin.query('LOCK TABLE folders IN ACCESS EXCLUSIVE MODE')
        try {
          return await work()
        } finally {
          await admin.query('ROLLBACK')
        }
      })

    const assertLockTimeout = (error: unknown, code: string) => {
      assert.ok(error instanceof StoreUnavailableError, String(error))
      assert.equal(error.timedOut, true)
      assert.match(error.message, /timed out waiting for a lock or for the statement to finish/)
      assert.doesNotMatch(error.message, /unreachable|unavailable/)
      assert.equal((error.cause as { code?: string }).code, code)
    }

    const failure = (promise: Promise<unknown>) =>
      promise.then(
        () => assert.fail('expected a failure'),
        (error: unknown) => error,
      )

    it('statement_timeout: StoreUnavailableError that says so; HTTP 503 without "unreachable"', async () => {
      const store: PostgresStore = await openPostgresStore(database.url, {
        poolSize: 1,
        connectTimeoutMs: 3000,
        statementTimeoutMs: 300,
      })
      try {
        assertLockTimeout(await whileLocked(() => failure(store.listFolders(ROOT))), '57014')
        const app = await appOver(store)
        try {
          const res = await whileLocked(() => request(app, { session: SESSION }))
          assert.equal(res.statusCode, 503, res.body)
          const problem = problemBody(res)
          assert.equal(problem.code, 'UNAVAILABLE')
          assert.match(problem.detail, /did not answer in time/)
          assert.doesNotMatch(problem.detail, /unreachable/)
          assert.ok(res.headers['retry-after'])
        } finally {
          await app.close()
        }
      } finally {
        await store.close()
      }
    })

    it('lock_timeout set on the server: the same, not a 500', async () => {
      const name = new URL(database.url).pathname.slice(1)
      await withAdminClient(database.url, (admin) =>
        admin.query(`ALTER DATABASE "${name}" SET lock_timeout = '200ms'`),
      )
      const store = await openPostgresStore(database.url, {
        poolSize: 1,
        connectTimeoutMs: 3000,
        statementTimeoutMs: 5000,
      })
      try {
        assertLockTimeout(await whileLocked(() => failure(store.listFolders(ROOT))), '55P03')
      } finally {
        await store.close()
        await withAdminClient(database.url, (admin) =>
          admin.query(`ALTER DATABASE "${name}" RESET lock_timeout`),
        )
      }
    })
  },
)
