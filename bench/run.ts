import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runBackend } from './lib/backend.js'
import type { BackendResult } from './lib/backend-result.js'
import { ensureBuilt, gitState } from '../harness/build.js'
import { generateDataSet } from './lib/dataset.js'
import { stopLoad } from './lib/load.js'
import { stopWrk } from './lib/wrk.js'
import { HELP, OptionsError, parseOptions, type BenchOptions } from './lib/options.js'
import { benchDatabase, redactUrl, type BenchDatabase } from './lib/postgres.js'
import { stopAllChildren } from './lib/processes.js'
import { formatBackend, machineInfo, verdicts } from './lib/report.js'
import { runWalkBench, type WalkFigures } from './walk.js'
import { runFeedBench, type FeedFigures } from './feed.js'

/**
 * `npm run bench`: a reproducible load benchmark of GET /v1/folders on loopback.
 * See HELP in options.ts; figures are meant to be compared as ratios within one run.
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => process.stdout.write(`${line}\n`)

/** A backend that did not run (no URL, adapter missing) or that failed part-way. */
type NotRun =
  { backend: 'sqlite' | 'postgres'; skipped: string } | { backend: 'sqlite' | 'postgres'; failed: string }

async function guarded(backend: 'sqlite' | 'postgres', work: () => Promise<BackendResult | NotRun>) {
  try {
    return await work()
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    log(`  ${backend} failed: ${message}`)
    return { backend, failed: message }
  }
}

/** Work to undo however the run ends: newest first. */
const cleanups: (() => Promise<void> | void)[] = []

async function cleanUp(): Promise<void> {
  stopLoad()
  stopWrk()
  await stopAllChildren()
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()?.()
    } catch (error) {
      log(`cleanup: ${(error as Error).message}`)
    }
  }
}

function onSignal(signal: NodeJS.Signals): void {
  log(`\n${signal}: stopping the children and cleaning up`)
  void cleanUp().finally(() => process.exit(130))
}

/** Hard bound on the whole run, whatever hangs. */
function watchdog(options: BenchOptions, backends: number): void {
  const perBackend =
    options.importTimeout +
    (8 * options.rounds + 2) * (options.warmup + options.duration + 2) +
    4 * (options.probeDuration + 1) +
    240
  const seconds = 300 + backends * perBackend
  setTimeout(() => {
    log(`\nthe bench ran past its ${Math.round(seconds)} s bound: stopping`)
    void cleanUp().finally(() => process.exit(3))
  }, seconds * 1000).unref()
}

function postgresAdapterMissing(): string | null {
  const adapter = join(root, 'dist/store/postgres/postgres-store.js')
  return existsSync(adapter)
    ? null
    : 'the PostgreSQL adapter is not built yet (dist/store/postgres/postgres-store.js is missing)'
}

async function runPostgres(
  options: BenchOptions,
  context: Parameters<typeof runBackend>[0],
): Promise<BackendResult | NotRun> {
  const base = options.postgresUrl as string
  const missing = postgresAdapterMissing()
  if (missing !== null) return { backend: 'postgres', skipped: missing }
  let database: BenchDatabase
  try {
    database = await benchDatabase(base)
  } catch (error) {
    return { backend: 'postgres', skipped: (error as Error).message }
  }
  const dispose = async () => {
    const warning = await database.dispose(context.data.userIds)
    if (warning !== null) log(`  ${warning}`)
  }
  cleanups.push(dispose)
  try {
    const result = await runBackend(context, 'postgres', database.url, redactUrl(database.url))
    return { ...result, note: database.mode }
  } finally {
    cleanups.splice(cleanups.indexOf(dispose), 1)
    await dispose()
  }
}

async function main(): Promise<number> {
  let options: BenchOptions | null
  try {
    options = parseOptions(process.argv.slice(2), process.env)
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error
    process.stderr.write(`bench: ${error.message}\n(npm run bench -- --help for the options)\n`)
    return 2
  }
  if (options === null) {
    process.stdout.write(HELP)
    return 0
  }

  const wantSqlite = options.backend !== 'postgres'
  const wantPostgres = options.backend !== 'sqlite'
  if (options.backend === 'postgres' && options.postgresUrl === null) {
    process.stderr.write('bench: --backend postgres needs --db postgres://... or TEST_DATABASE_URL\n')
    return 2
  }
  watchdog(options, (wantSqlite ? 1 : 0) + (wantPostgres && options.postgresUrl !== null ? 1 : 0))
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  const machine = machineInfo()
  log(
    `folder-service bench${options.quick ? ' (--quick)' : ''}: ${machine.cpuCount} x ${machine.cpuModel}, Node ${machine.node}`,
  )
  const build = ensureBuilt(root, options.build)
  log(`dist/: ${build.action}${build.warning ? `\n${build.warning}` : ''}`)

  const tmp = mkdtempSync(join(tmpdir(), 'folder-service-bench-'))
  if (!options.keep) cleanups.push(() => rmSync(tmp, { recursive: true, force: true }))
  else log(`keeping ${tmp}`)

  const generated = performance.now()
  const data = generateDataSet(join(tmp, 'data.json'), options)
  log(
    `data set: ${data.counts.users} users, ${data.counts.sessions} sessions, ` +
      `${data.counts.folders.toLocaleString('en')} folders (${data.counts.deletedFolders} deleted), ` +
      `${(data.bytes / 1024 / 1024).toFixed(1)} MB, made in ${((performance.now() - generated) / 1000).toFixed(1)} s`,
  )

  const context = { root, options, data, tmp, log }
  const results: (BackendResult | NotRun)[] = []
  if (wantSqlite) {
    const url = `sqlite:${join(tmp, 'bench.db')}`
    log(`\nSQLite (${url})`)
    results.push(await guarded('sqlite', () => runBackend(context, 'sqlite', url, url)))
  }
  if (wantPostgres) {
    if (options.postgresUrl === null) {
      results.push({
        backend: 'postgres',
        skipped: 'no PostgreSQL URL: pass --db postgres://... or set TEST_DATABASE_URL',
      })
    } else {
      log(`\nPostgreSQL (${redactUrl(options.postgresUrl)})`)
      results.push(await guarded('postgres', () => runPostgres(options, context)))
    }
  }

  log('')
  for (const result of results) {
    const title = result.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'
    if ('skipped' in result) log(`== ${title}: skipped: ${result.skipped}\n`)
    else if ('failed' in result) log(`== ${title}: FAILED: ${result.failed}\n`)
    else log(`${formatBackend(result, options.connections)}\n`)
  }
  if (options.quick)
    log('(--quick: small data set and short phases; run without it for the figures to quote)')

  // Deep pages and walks (offset against cursor), and one session digging while another
  // user lists: single requests on one connection, so they run after the load phases.
  let walks: WalkFigures[] | { failed: string } = []
  if (options.huge > 0) {
    log('')
    try {
      walks = await runWalkBench({
        huge: options.huge,
        backend: options.backend,
        postgresUrl: options.postgresUrl,
      })
    } catch (error) {
      walks = { failed: (error as Error).message }
      log(`walks failed: ${walks.failed}`)
    }
  }

  // The changes feed: a drain against a listing page, and 10,000 held requests in one process.
  let feed: FeedFigures[] | { failed: string } = []
  if (options.huge > 0) {
    log('')
    try {
      feed = await runFeedBench({
        huge: options.huge,
        waiters: 10_000,
        backend: options.backend,
        postgresUrl: options.postgresUrl,
      })
    } catch (error) {
      feed = { failed: (error as Error).message }
      log(`changes feed failed: ${feed.failed}`)
    }
  }

  const stamp = machine.date.replace(/[:.]/g, '-')
  const outDir = resolve(root, options.outDir)
  mkdirSync(outDir, { recursive: true })
  const report = {
    machine: { ...machine, loadAverageAtEnd: loadavg() },
    git: gitState(root),
    build,
    options: {
      ...options,
      postgresUrl: options.postgresUrl === null ? null : redactUrl(options.postgresUrl),
    },
    dataSet: { counts: data.counts, bytes: data.bytes },
    results: results.map((r) => ('skipped' in r || 'failed' in r ? r : { ...r, targets: verdicts(r) })),
    walks,
    feed,
  }
  const text = `${JSON.stringify(report, null, 2)}\n`
  writeFileSync(join(outDir, `${stamp}.json`), text)
  writeFileSync(join(outDir, 'latest.json'), text)
  log(`figures: ${join(outDir, `${stamp}.json`)} (and latest.json)`)
  return results.some((r) => 'failed' in r) ? 1 : 0
}

let code = 1
try {
  code = await main()
} catch (error) {
  process.stderr.write(
    `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  )
} finally {
  await cleanUp()
}
process.exit(code)
