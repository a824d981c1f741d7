import type { UmzugStorage } from 'umzug'

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

/**
 * Applies, with umzug, the migrations the storage has not recorded. umzug costs about
 * 0.2 s of CPU to load, so it is imported only when a migration is pending: starting the
 * server or running a CLI command on an up-to-date database never pays for it.
 */
export async function runPendingMigrations(migrations: Migration[], storage: UmzugStorage): Promise<void> {
  const applied = new Set(await storage.executed({ context: undefined }))
  if (migrations.every(({ name }) => applied.has(name))) return
  const { Umzug } = await import('umzug')
  await new Umzug({ migrations, storage, logger: undefined }).up()
}
