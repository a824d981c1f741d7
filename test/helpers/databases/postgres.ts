import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { openStore } from '../../../src/store/open-store.js'
import type { Store } from '../../../src/store/store.js'
import { TEST_SETTINGS } from './backends.js'

/**
 * A fresh PostgreSQL database per call, created with the role of `url` (which needs
 * CREATEDB), so tests never see each other's data and the returned URL opens the same data
 * from another process (the CLI).
 *
 * The database's default collation is ICU en-US when the server has ICU: there "Gamma"
 * sorts after "alpha", so a query that forgets the schema's COLLATE "C" fails the
 * ordering tests instead of passing by luck on a C-locale cluster.
 */

const ICU_OPTIONS = "TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"

/** `url` with its database replaced by `database`. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${encodeURIComponent(database)}`
  return parsed.toString()
}

/** Runs `work` on a short-lived connection to `url`. */
export async function withAdminClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/**
 * Creates an empty database (no schema) with the role of `url`; `drop` removes it, even
 * while a process a test started still holds a connection to it. A non-superuser's
 * DROP DATABASE ... WITH (FORCE) fails with 42501 while an autovacuum worker is in the
 * database (common after heavy writes), so the drop is retried for a few seconds.
 */
export async function createEmptyDatabase(url: string): Promise<{ url: string; drop(): Promise<void> }> {
  if (url === '') throw new Error('a PostgreSQL URL is needed (TEST_DATABASE_URL)')
  const name = `fs_test_${randomBytes(6).toString('hex')}`
  const quoted = pg.escapeIdentifier(name)
  await withAdminClient(url, async (client) => {
    try {
      await client.query(`CREATE DATABASE ${quoted} ${ICU_OPTIONS}`)
    } catch {
      // PostgreSQL before 15, or built without ICU: the cluster's default will do.
      await client.query(`CREATE DATABASE ${quoted} TEMPLATE template0 ENCODING 'UTF8'`)
    }
  })
  let dropped: Promise<void> | undefined
  const dropOnce = async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        await withAdminClient(url, (client) => client.query(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`))
        return
      } catch (error) {
        const code = (error as { code?: string }).code
        // 42501: an autovacuum worker; 55006: a connection that had not yet gone.
        if (attempt >= 20 || (code !== '42501' && code !== '55006')) throw error
        await sleep(250)
      }
    }
  }
  return {
    url: withDatabase(url, name),
    drop: () => (dropped ??= dropOnce()),
  }
}

export async function freshPostgresDatabase(
  url: string,
): Promise<{ store: Store; url: string; cleanup(): Promise<void> }> {
  const database = await createEmptyDatabase(url)
  let store: Store
  try {
    store = await openStore({ ...TEST_SETTINGS, databaseUrl: database.url })
  } catch (error) {
    await database.drop()
    throw error
  }
  let cleaned = false
  return {
    store,
    url: database.url,
    async cleanup() {
      if (cleaned) return
      cleaned = true
      await store.close()
      await database.drop()
    },
  }
}

/**
 * A fresh database made on the server of `url`, its store opened through the pooler of
 * `poolerUrl` (the same role and server) with DATABASE_POOLER=transaction.
 */
export async function pooledDatabase(
  url: string,
  poolerUrl: string,
): Promise<{ store: Store; url: string; cleanup(): Promise<void> }> {
  if (poolerUrl === '') throw new Error('TEST_POOLER_URL is not set (.ci/pgbouncer.sh starts a PgBouncer)')
  const database = await createEmptyDatabase(url)
  const through = withDatabase(poolerUrl, decodeURIComponent(new URL(database.url).pathname.slice(1)))
  let store: Store
  try {
    store = await openStore({ ...TEST_SETTINGS, databaseUrl: through, databasePooler: 'transaction' })
  } catch (error) {
    await database.drop()
    throw error
  }
  let cleaned = false
  return {
    store,
    url: through,
    async cleanup() {
      if (cleaned) return
      cleaned = true
      await store.close()
      await database.drop()
    },
  }
}
