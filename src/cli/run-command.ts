import { loadConfig, type Config, type ConfigFlags } from '../config.js'
import { openStore } from '../store/open-store.js'
import { validateImport } from '../import/validate-import.js'
import { ImportError, type ImportData, type Store } from '../store/store.js'
import { startTracing, stopTracing } from '../tracing/start-tracing.js'

/**
 * How every CLI command runs: settings from --db and the environment, a store opened and
 * always closed, and any failure reported as one line on stderr with exit code 1
 * (README, "Command line": bad arguments give a one-line error and a non-zero exit).
 */

export class UsageError extends Error {
  override readonly name = 'UsageError'
}

/** How every error line of the command starts, the parser's own included (main.ts). */
export const ERROR_PREFIX = 'folder-service: '

export function fail(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`${ERROR_PREFIX}${message.split('\n')[0] ?? message}\n`)
  process.exitCode = 1
}

/**
 * Validates and writes records the command made from its own arguments: an import file's
 * record position (`users[0]`) means nothing to whoever typed the command, so an ImportError
 * becomes a UsageError with its reason alone.
 */
export async function ownRecords<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw error instanceof ImportError ? new UsageError(error.reason, { cause: error }) : error
  }
}

/** Validates records made from the command's arguments and imports them (see ownRecords). */
export function importOwnRecords(store: Store, input: unknown, now: number): Promise<ImportData> {
  return ownRecords(async () => {
    const data = validateImport(input, now)
    await store.importData(data)
    return data
  })
}

export interface DbOptions {
  db?: string
}

export async function withStore(
  /** `seed` also takes --host and --port: the address its printed curl names */
  options: DbOptions & Pick<ConfigFlags, 'host' | 'port'>,
  work: (store: Store, config: Readonly<Config>) => Promise<void>,
  /** told the schema steps opening the store applied (`migrate` prints them) */
  migrated?: (steps: readonly string[]) => void,
  /** the command's name, for a command traced when OTEL_TRACES_EXPORTER asks (its root span) */
  traced?: string,
) {
  try {
    const config = loadConfig(process.env, { db: options.db, host: options.host, port: options.port })
    const run = async () => {
      const store = await openStore(config, migrated)
      try {
        await work(store, config)
      } finally {
        await store.close()
      }
    }
    // Started before the store opens, which is built traced or not (src/tracing/).
    const tracing = traced === undefined ? null : await startTracing(config)
    if (tracing === null) return await run()
    tracing.reportTo({ warn: (_details, message) => process.stderr.write(`${message}\n`) })
    try {
      // A caller's trace continues through the environment (OpenTelemetry's environment carrier).
      const { TRACEPARENT: traceparent, TRACESTATE: tracestate } = process.env
      await tracing.root(traced ?? '', run, { traceparent, tracestate })
    } finally {
      await stopTracing()
    }
  } catch (error) {
    fail(error)
  }
}

/** Prints records as JSON (with --json) or as aligned text lines. */
export function print(json: boolean | undefined, value: unknown, asText: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${asText()}\n`)
}
