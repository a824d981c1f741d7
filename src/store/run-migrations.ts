import type { UmzugStorage } from 'umzug'

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
