import type { Command } from 'commander'
import { importFileSize, readImportFile } from '../../import/read-import-file.js'
import { StoreUnavailableError, type ImportCounts, type ImportItem } from '../../store/store.js'
import { showProgress, type ImportProgress } from '../import-progress.js'
import { print, UsageError, withStore, type DbOptions } from '../run-command.js'
import { seedDemo } from '../seed-demo.js'
import { openableUrl } from '../../service-url.js'
import { parseDatabaseUrl, type DatabaseTarget } from '../../store/open-store.js'
import { activeTracing } from '../../tracing/tracing.js'

/** migrate, import and seed: commands that bring data and schema into a database. */

/** The reader's batches; marks the moment the file is read (the database's part begins). */
async function* recordsThenWrite(
  batches: AsyncIterable<ImportItem[]>,
  progress: ImportProgress,
  started: number,
): AsyncGenerator<ImportItem[]> {
  yield* batches
  progress.readAt = (performance.now() - started) / 1000
}

const BACKEND_NAMES = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const

/**
 * What `migrate` did, in one line: the steps it applied, or that there were none to apply.
 * Steps are numbered alike on both backends and each backend skips the numbers it does not
 * need, so a fresh SQLite database and a fresh PostgreSQL one apply different counts: the
 * line names the backend and says so.
 */
function migrationReport(steps: readonly string[], backend: DatabaseTarget['kind']): string {
  if (steps.length === 0) return 'schema is up to date (nothing to apply)'
  const name = BACKEND_NAMES[backend]
  const named =
    steps.length === 1
      ? `${name} schema step ${steps[0]}`
      : `${steps.length} ${name} schema steps, ${steps[0]} to ${steps.at(-1)}`
  return `applied ${named} (numbered alike on both backends; each skips the numbers it does not need); schema is up to date`
}

export function registerDataCommands(program: Command): void {
  program
    .command('migrate')
    .description('create or upgrade the database schema')
    .option('--db <url>', 'database URL (default: DATABASE_URL or sqlite:./data/folder-service.db)')
    .action((options: DbOptions) => {
      let steps: readonly string[] = []
      return withStore(
        options,
        (_store, config) => {
          process.stdout.write(`${migrationReport(steps, parseDatabaseUrl(config.databaseUrl).kind)}\n`)
          return Promise.resolve()
        },
        (applied) => {
          steps = applied
        },
      )
    })

  program
    .command('import')
    .description('load a JSON data file in one transaction (all or nothing)')
    .argument('<file>', 'the data file (format: docs/api.md, "Import format")')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the counts as JSON')
    .action((file: string, options: DbOptions & { json?: boolean }) =>
      withStore(
        options,
        async (store) => {
          const started = performance.now()
          const progress: ImportProgress = {
            totalBytes: await importFileSize(file),
            bytesRead: 0,
            records: 0,
          }
          const display = showProgress(progress, process.stderr, started)
          let counts: ImportCounts
          try {
            counts = await store.importStream(
              recordsThenWrite(readImportFile(file, Date.now(), progress), progress, started),
            )
          } catch (error) {
            // One transaction: a database lost midway (a failover included) committed none of it.
            if (!(error instanceof StoreUnavailableError)) throw error
            throw new StoreUnavailableError(`${error.message}; nothing was imported, run the import again`, {
              cause: error,
            })
          } finally {
            display.stop()
          }
          const seconds = (performance.now() - started) / 1000
          const records = counts.users + counts.sessions + counts.folders + counts.files
          const tracing = activeTracing()
          for (const kind of ['users', 'sessions', 'folders', 'files'] as const) {
            tracing?.annotate(`folder_service.import.${kind}`, counts[kind])
          }
          const rate = Math.round(records / Math.max(seconds, 0.001))
          print(
            options.json,
            { ...counts, seconds, records_per_second: rate },
            () =>
              `imported ${counts.users} users, ${counts.sessions} sessions, ${counts.folders} folders, ` +
              `${counts.files} files in ${seconds.toFixed(2)} s (${rate.toLocaleString('en-US')} records/s)`,
          )
        },
        undefined,
        'import',
      ),
    )

  program
    .command('seed')
    .description('create (once) a demo user, a live session and a folder tree')
    .option('--demo', 'the demo data set (required)')
    .option('--db <url>', 'database URL')
    .option('--host <host>', 'the address serve listens on, for the printed curl (env HOST)')
    .option('--port <port>', 'the port serve listens on, for the printed curl (env PORT)')
    .option('--json', 'print the session and user as JSON')
    .action((options: DbOptions & { demo?: boolean; json?: boolean; host?: string; port?: string }) =>
      withStore(options, async (store, config) => {
        if (!options.demo) throw new UsageError('seed needs --demo (the only data set there is)')
        const demo = await seedDemo(store, Date.now())
        // The seed cannot see a server; it names the one the same settings would start.
        const base = config.port === 0 ? 'http://127.0.0.1:PORT' : openableUrl(config.host, config.port)
        const curl = `curl -s --cookie 'session_id=${demo.sessionId}' '${base}/v1/folders'`
        print(options.json, { ...demo, curl }, () =>
          [
            demo.created ? 'demo data created' : 'demo data already present',
            `user:       ${demo.username} (${demo.userId})`,
            `session_id: ${demo.sessionId}`,
            `try:        ${curl}`,
            `            (for serve with the same HOST and PORT, or --host and --port; default 127.0.0.1:3000)`,
          ].join('\n'),
        )
      }),
    )
}
