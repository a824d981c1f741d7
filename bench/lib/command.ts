import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { ensureBuilt } from '../../harness/build.js'
import { benchDatabase, redactUrl } from './postgres.js'
import { stopAllChildren } from './processes.js'

/**
 * The command line shared by the benches that run on their own (`npm run bench:walk`,
 * `bench:feed`): `--huge N`, `--db URL` (else TEST_DATABASE_URL), `--backend all|sqlite|postgres`
 * and the bench's own numeric options. dist/ is built first; every child process started by
 * the bench is stopped at the end, however it ends.
 */

type BackendChoice = 'all' | 'sqlite' | 'postgres'

export interface BenchCommand {
  huge: number
  backend: BackendChoice
  postgresUrl: string | null
  /** the bench's own options, by name, as numbers */
  numbers: Record<string, number>
}

const root = fileURLToPath(new URL('../..', import.meta.url))

export async function runBenchCommand(
  numbers: Record<string, string>,
  run: (command: BenchCommand) => Promise<unknown>,
): Promise<void> {
  const own = Object.fromEntries(
    Object.entries(numbers).map(([name, fallback]) => [name, { type: 'string' as const, default: fallback }]),
  )
  const { values } = parseArgs({
    options: {
      huge: { type: 'string', default: '100000' },
      db: { type: 'string' },
      backend: { type: 'string', default: 'all' },
      ...own,
    },
  })
  const backend = values.backend
  if (backend !== 'all' && backend !== 'sqlite' && backend !== 'postgres') {
    throw new Error('--backend must be all, sqlite or postgres')
  }
  // parseArgs types options spread from a record as string | boolean; every one is a string here.
  const given = values as Record<string, string | undefined>
  process.stdout.write(`dist/: ${ensureBuilt(root, true).action}\n`)
  try {
    await run({
      huge: Number(values.huge),
      backend,
      postgresUrl: values.db ?? process.env.TEST_DATABASE_URL ?? null,
      numbers: Object.fromEntries(Object.keys(numbers).map((name) => [name, Number(given[name])])),
    })
  } finally {
    await stopAllChildren()
  }
}

/** What {@link onEachBackend} runs: one bench phase over one database, printed as it goes. */
export interface BackendPhase<D, F> {
  /** names the temporary folder and the SQLite file */
  name: string
  backend: BackendChoice
  postgresUrl: string | null
  /** users the phase creates in a PostgreSQL database it shares, removed at the end */
  users: string[]
  /** writes the phase's data into `tmp`, once for both backends */
  prepare(tmp: string): D
  measure(label: string, databaseUrl: string, data: D): Promise<F>
  report(figures: F): void
  log(line: string): void
}

/**
 * Runs `phase` on SQLite (a file in a temporary folder) and on PostgreSQL (a bench database
 * of `postgresUrl`) as `backend` asks, returning the figures of each; the temporary folder
 * and the PostgreSQL users are removed however it ends.
 */
export async function onEachBackend<D, F>(phase: BackendPhase<D, F>): Promise<F[]> {
  const figures: F[] = []
  const tmp = mkdtempSync(join(tmpdir(), `folder-service-${phase.name}-`))
  try {
    const data = phase.prepare(tmp)
    const run = async (label: string, url: string) => {
      const result = await phase.measure(label, url, data)
      figures.push(result)
      phase.report(result)
    }
    if (phase.backend !== 'postgres') await run('SQLite', `sqlite:${join(tmp, `${phase.name}.db`)}`)
    if (phase.backend !== 'sqlite') {
      if (phase.postgresUrl === null) phase.log('== PostgreSQL: skipped (no --db and no TEST_DATABASE_URL)')
      else {
        const database = await benchDatabase(phase.postgresUrl)
        try {
          phase.log(`(PostgreSQL at ${redactUrl(database.url)})`)
          await run('PostgreSQL', database.url)
        } finally {
          await database.dispose(phase.users)
        }
      }
    }
    return figures
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}
