/**
 * A schema step as an adapter writes it: SQL, and optionally a query for rows that the step
 * cannot accept (a new constraint that existing data breaks). Such rows stop the upgrade
 * with refusal(), naming them, before anything changes: the operator fixes the data and
 * starts again.
 */
export interface SqlMigration {
  name: string
  sql: string
  /** returns one `id` column per offending row (at most a few: it is for the message) */
  refuseRows?: { query: string; rule: string }
}

/** The error that stops an upgrade on rows breaking `rule`. */
export function refusal(name: string, rule: string, ids: string[]): Error {
  return new Error(
    `migration ${name} cannot run: ${rule}, and these rows do not: ${ids.join(', ')}` +
      ' (fix or remove them, then start again)',
  )
}

/** A schema step of one adapter; names sort in the order they apply. */
export interface Migration {
  name: string
  up: () => Promise<void>
}

/** Where an adapter records the steps applied (its schema_migrations table). */
export interface MigrationStorage {
  /** the names of the steps applied, none before the first upgrade */
  executed(): Promise<string[]>
  logMigration(name: string): Promise<void>
}

/**
 * Applies, in list order, the steps the storage has not recorded, recording each after it
 * runs, and returns their names; the caller's transaction holds them all, so a step that fails leaves none applied.
 * The message of a failure names the step (in the words umzug used before, which operators
 * may have matched) and keeps the error as its cause (postgres-errors.ts reads the causes).
 */
export async function runPendingMigrations(
  migrations: readonly Migration[],
  storage: MigrationStorage,
): Promise<string[]> {
  const applied = new Set(await storage.executed())
  const now: string[] = []
  for (const { name, up } of migrations) {
    if (applied.has(name)) continue
    try {
      await up()
    } catch (error) {
      const cause =
        error instanceof Error
          ? `Original error: ${error.message}`
          : `Non-error value thrown: ${String(error)}`
      throw new Error(`Migration ${name} (up) failed: ${cause}`, { cause: error })
    }
    await storage.logMigration(name)
    now.push(name)
  }
  return now
}
