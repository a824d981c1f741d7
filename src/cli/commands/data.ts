import { readFile } from 'node:fs/promises'
import type { Command } from 'commander'
import { validateImport } from '../../import/validate-import.js'
import { print, UsageError, withStore, type DbOptions } from '../run-command.js'
import { seedDemo } from '../seed-demo.js'

/** migrate, import and seed: commands that bring data and schema into a database. */

export async function readImportFile(path: string): Promise<unknown> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new UsageError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`)
  }
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new UsageError(`${path} is not valid JSON: ${(error as Error).message}`)
  }
}

export function registerDataCommands(program: Command): void {
  program
    .command('migrate')
    .description('create or upgrade the database schema')
    .option('--db <url>', 'database URL (default: DATABASE_URL or sqlite:./data/folder-service.db)')
    .action((options: DbOptions) =>
      withStore(options, () => {
        process.stdout.write('schema is up to date\n')
        return Promise.resolve()
      }),
    )

  program
    .command('import')
    .description('load a JSON data file in one transaction (all or nothing)')
    .argument('<file>', 'the data file (format: CONTRACT section 9, see README)')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the counts as JSON')
    .action((file: string, options: DbOptions & { json?: boolean }) =>
      withStore(options, async (store) => {
        const started = performance.now()
        const data = validateImport(await readImportFile(file), Date.now())
        const counts = await store.importData(data)
        const seconds = (performance.now() - started) / 1000
        print(
          options.json,
          { ...counts, seconds },
          () =>
            `imported ${counts.users} users, ${counts.sessions} sessions, ${counts.folders} folders, ` +
            `${counts.files} files in ${seconds.toFixed(2)} s`,
        )
      }),
    )

  program
    .command('seed')
    .description('create (once) a demo user, a live session and a folder tree')
    .option('--demo', 'the demo data set (required)')
    .option('--db <url>', 'database URL')
    .option('--json', 'print the session and user as JSON')
    .action((options: DbOptions & { demo?: boolean; json?: boolean }) =>
      withStore(options, async (store, config) => {
        if (!options.demo) throw new UsageError('seed needs --demo (the only data set there is)')
        const demo = await seedDemo(store, Date.now())
        const curl = `curl -s --cookie 'session_id=${demo.sessionId}' 'http://${config.host}:${config.port}/v1/folders'`
        print(options.json, { ...demo, curl }, () =>
          [
            demo.created ? 'demo data created' : 'demo data already present',
            `user:       ${demo.username} (${demo.userId})`,
            `session_id: ${demo.sessionId}`,
            `try:        ${curl}`,
          ].join('\n'),
        )
      }),
    )
}
