import type Database from 'better-sqlite3'
import { refusal, runPendingMigrations, type Migration, type MigrationStorage } from '../run-migrations.js'
import { MIGRATIONS } from './migrations/index.js'

/**
 * Runs the embedded backend's schema steps (migrations/, the only importer of that folder).
 * Each step runs once, recorded in schema_migrations; the whole upgrade is one IMMEDIATE
 * transaction, so two processes starting at once cannot both apply it and a failure leaves
 * the old schema.
 */

/** The steps' names in the order they apply (the step lists' test compares the backends). */
export const sqliteMigrationNames: readonly string[] = MIGRATIONS.map(({ name }) => name)

/** schema_migrations; reads as empty until the first upgrade creates it. */
function migrationStorage(db: Database.Database): MigrationStorage {
  const exists = () =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !==
    undefined
  return {
    executed: () =>
      Promise.resolve(
        exists()
          ? (db.prepare('SELECT name FROM schema_migrations ORDER BY name').pluck().all() as string[])
          : [],
      ),
    logMigration: (name) => {
      db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        name TEXT PRIMARY KEY NOT NULL, applied_at INTEGER NOT NULL) STRICT`)
      db.prepare('INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)').run(name, Date.now())
      return Promise.resolve()
    },
  }
}

/**
 * Brings the schema up to date. An up-to-date database is only read, so starting a server
 * or a command never waits for a writer (a long import, say); an upgrade takes the write
 * lock and checks again inside it, in case another process upgraded meanwhile.
 */
export async function migrateSqlite(db: Database.Database): Promise<string[]> {
  const migrations: Migration[] = MIGRATIONS.map(({ name, sql, refuseRows }) => ({
    name,
    up: () => {
      const offending = refuseRows && (db.prepare(refuseRows.query).pluck().all() as string[])
      if (refuseRows && offending && offending.length > 0) throw refusal(name, refuseRows.rule, offending)
      db.exec(sql)
      return Promise.resolve()
    },
  }))
  const storage = migrationStorage(db)
  const applied = new Set(await storage.executed())
  if (migrations.every(({ name }) => applied.has(name))) return []
  db.exec('BEGIN IMMEDIATE')
  try {
    const now = await runPendingMigrations(migrations, storage)
    db.exec('COMMIT')
    return now
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK')
    throw error
  }
}
