import { loadConfig, type Config } from '../config.js'
import { openStore } from '../store/open-store.js'
import type { Store } from '../store/store.js'

/**
 * How every CLI command runs: settings from --db and the environment, a store opened and
 * always closed, and any failure reported as one line on stderr with exit code 1
 * (README, "Command line": bad arguments give a one-line error and a non-zero exit).
 */

export class UsageError extends Error {
  override readonly name = 'UsageError'
}

export function fail(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`folder-service: ${message.split('\n')[0] ?? message}\n`)
  process.exitCode = 1
}

export interface DbOptions {
  db?: string
}

export async function withStore(
  options: DbOptions,
  work: (store: Store, config: Readonly<Config>) => Promise<void>,
) {
  try {
    const config = loadConfig(process.env, { db: options.db })
    const store = await openStore(config)
    try {
      await work(store, config)
    } finally {
      await store.close()
    }
  } catch (error) {
    fail(error)
  }
}

/** Prints records as JSON (with --json) or as aligned text lines. */
export function print(json: boolean | undefined, value: unknown, asText: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${asText()}\n`)
}
