import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { ensureBuilt } from './build.js'
import { stopAllChildren } from './processes.js'

/**
 * The command line shared by the benches that run on their own (`npm run bench:walk`,
 * `bench:feed`): `--huge N`, `--db URL` (else TEST_DATABASE_URL), `--backend all|sqlite|postgres`
 * and the bench's own numeric options. dist/ is built first; every child process started by
 * the bench is stopped at the end, however it ends.
 */

export type BackendChoice = 'all' | 'sqlite' | 'postgres'

export interface BenchCommand {
  huge: number
  backend: BackendChoice
  postgresUrl: string | null
  /** the bench's own options, by name, as numbers */
  numbers: Record<string, number>
}

const root = fileURLToPath(new URL('..', import.meta.url))

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
