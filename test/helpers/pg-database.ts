import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { openStore } from '../../src/store/open-store.js'
import { TEST_SETTINGS, postgresBackend, sqliteBackend, type Backend } from './backends.js'

/**
 * Throwaway PostgreSQL databases for the reliability suites, like test/helpers/postgres.ts
 * but with a drop that retries: a non-superuser's DROP DATABASE ... WITH (FORCE) fails with
 * 42501 ("must be a member of the role whose process is being terminated") while an
 * autovacuum worker is in the database, which happens after the heavy writes of these
 * suites. The worker is gone within moments, so the drop is retried for a few seconds.
 */

const ICU_OPTIONS = "TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

export interface ThrowawayDatabase {
  url: string
  drop(): Promise<void>
}

/** An empty database (no schema) owned by the role of `adminUrl` (which needs CREATEDB). */
export async function createThrowawayDatabase(adminUrl: string): Promise<ThrowawayDatabase> {
  if (adminUrl === '') throw new Error('a PostgreSQL URL is needed (TEST_DATABASE_URL)')
  const name = `fs_reliability_${randomBytes(6).toString('hex')}`
  const quoted = pg.escapeIdentifier(name)
  await withClient(adminUrl, async (client) => {
    try {
      await client.query(`CREATE DATABASE ${quoted} ${ICU_OPTIONS}`)
    } catch {
      await client.query(`CREATE DATABASE ${quoted} TEMPLATE template0 ENCODING 'UTF8'`)
    }
  })
  const url = new URL(adminUrl)
  url.pathname = `/${encodeURIComponent(name)}`
  let dropped: Promise<void> | undefined
  return {
    url: url.toString(),
    drop() {
      dropped ??= (async () => {
        for (let attempt = 1; ; attempt++) {
          try {
            await withClient(adminUrl, (client) =>
              client.query(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`),
            )
            return
          } catch (error) {
            const code = (error as { code?: string }).code
            // 42501: an autovacuum worker; 55006: a connection that had not yet gone.
            if (attempt >= 20 || (code !== '42501' && code !== '55006')) throw error
            await sleep(250)
          }
        }
      })()
      return dropped
    },
  }
}

/** PostgreSQL as {@link postgresBackend} sees it (same skip), on databases that drop reliably. */
export const reliablePostgresBackend: Backend = {
  name: 'postgres',
  skip: postgresBackend.skip,
  async open() {
    const database = await createThrowawayDatabase(process.env.TEST_DATABASE_URL ?? '')
    try {
      const store = await openStore({ ...TEST_SETTINGS, databaseUrl: database.url })
      let closed = false
      return {
        store,
        url: database.url,
        async cleanup() {
          if (closed) return
          closed = true
          await store.close()
          await database.drop()
        },
      }
    } catch (error) {
      await database.drop()
      throw error
    }
  },
}

/** SQLite always, PostgreSQL when TEST_DATABASE_URL is set (reported as skipped otherwise). */
export function reliabilityBackends(): Backend[] {
  return [sqliteBackend, reliablePostgresBackend]
}
