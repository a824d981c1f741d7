import Database from 'better-sqlite3'
import pg from 'pg'
import { parseDatabaseUrl } from '../../../src/store/open-store.js'
import { withAdminClient } from './postgres.js'

/**
 * A backup of a live database, restored later into the same live database while the
 * service keeps running, as an operator would after a mistake: everything the backup held,
 * derived data and counters included, comes back as it was.
 *
 * SQLite: SQLite's online backup API, both ways (a consistent copy, written back under the
 * write lock; other connections see the restored pages on their next read).
 * PostgreSQL: the rows of the service's tables and the values of its sequences, put back
 * with user triggers disabled (as pg_restore --disable-triggers does), so the restore itself
 * is not taken for a set of new writes.
 */
export interface Backup {
  restore(): Promise<void>
}

const TABLES = ['users', 'sessions', 'folders', 'files', 'folder_changes'] as const

export async function backUp(url: string, scratchPath: string): Promise<Backup> {
  const target = parseDatabaseUrl(url)
  if (target.kind === 'sqlite') {
    const live = new Database(target.path)
    await live.backup(scratchPath)
    live.close()
    return {
      async restore() {
        const saved = new Database(scratchPath, { readonly: true })
        try {
          await saved.backup(target.path)
        } finally {
          saved.close()
        }
      },
    }
  }
  return withAdminClient(target.url, async (client) => {
    const tables: string[] = []
    for (const table of TABLES) {
      const { rows } = await client.query<{ exists: boolean }>(
        'SELECT to_regclass($1) IS NOT NULL AS exists',
        [table],
      )
      if (!rows[0]?.exists) continue
      tables.push(table)
      await client.query(`CREATE TABLE ${pg.escapeIdentifier(`saved_${table}`)} AS TABLE ${table}`)
    }
    const { rows: sequences } = await client.query<{ name: string; value: string | null }>(
      'SELECT sequencename AS name, last_value::text AS value FROM pg_sequences WHERE schemaname = current_schema()',
    )
    return {
      restore: () =>
        withAdminClient(target.url, async (restoring) => {
          await restoring.query('BEGIN')
          for (const table of ['users', 'folders'])
            await restoring.query(`ALTER TABLE ${table} DISABLE TRIGGER USER`)
          for (const table of [...tables].reverse()) {
            await restoring.query(`DELETE FROM ${table}`)
          }
          for (const table of tables) {
            const identity = table === 'folder_changes' ? 'OVERRIDING SYSTEM VALUE' : ''
            await restoring.query(
              `INSERT INTO ${table} ${identity} SELECT * FROM ${pg.escapeIdentifier(`saved_${table}`)}`,
            )
          }
          for (const { name, value } of sequences) {
            await restoring.query('SELECT setval($1::regclass, $2::int8, $3)', [
              name,
              value ?? 1,
              value !== null,
            ])
          }
          for (const table of ['users', 'folders'])
            await restoring.query(`ALTER TABLE ${table} ENABLE TRIGGER USER`)
          await restoring.query('COMMIT')
        }),
    }
  })
}
