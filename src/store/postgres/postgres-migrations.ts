import { refusal, runPendingMigrations, type MigrationStorage } from '../run-migrations.js'
import type { Client } from './postgres-connections.js'
import { MIGRATIONS } from './migrations/index.js'

/**
 * Runs the PostgreSQL backend's schema steps (migrations/, the only importer of that
 * folder). Each step runs once, recorded in schema_migrations. The whole upgrade runs in the
 * caller's transaction under a transaction-scoped advisory lock, so instances starting
 * together apply it once (the others wait, then find nothing to do) and a failure leaves
 * the previous schema. Tables go to the first schema of search_path.
 */

/** The steps' names in the order they apply (the step lists' test compares the backends). */
export const postgresMigrationNames: readonly string[] = MIGRATIONS.map(({ name }) => name)

/** Key of the advisory lock that serialises migrations (any constant shared by all instances). */
const MIGRATION_LOCK_KEY = '7301185042'

function migrationStorage(client: Client): MigrationStorage {
  return {
    executed: async () =>
      (await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name')).rows.map(
        (row) => row.name,
      ),
    logMigration: async (name) => {
      await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name])
    },
  }
}

/**
 * Brings the schema up to date. Must run inside a transaction on `client`: the advisory
 * lock is released, and the migrations become visible, at its end.
 */
export async function migratePostgres(client: Client): Promise<string[]> {
  await client.query('SELECT pg_advisory_xact_lock($1::int8)', [MIGRATION_LOCK_KEY])
  // Names are measured (CHECK char_length) and compared in code points only in UTF-8.
  const { rows } = await client.query<{ encoding: string }>(
    "SELECT current_setting('server_encoding') AS encoding",
  )
  const encoding = rows[0]?.encoding
  if (encoding !== 'UTF8') {
    throw new Error(`the PostgreSQL database must use the UTF8 encoding, not ${encoding}`)
  }
  await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
  return runPendingMigrations(
    MIGRATIONS.map(({ name, sql, refuseRows }) => ({
      name,
      up: async () => {
        if (refuseRows) {
          const { rows } = await client.query<{ id: string }>(refuseRows.query)
          if (rows.length > 0)
            throw refusal(
              name,
              refuseRows.rule,
              rows.map((row) => row.id),
            )
        }
        await client.query(sql)
      },
    })),
    migrationStorage(client),
  )
}
