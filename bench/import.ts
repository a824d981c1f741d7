import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { CLI } from '../harness/build.js'
import { writeImportFile } from './lib/import-data.js'
import { benchDatabase } from './lib/postgres.js'
import { readRss } from './lib/process-stats.js'

/**
 * `npm run bench:import [-- SIZES...]`: imports generated data files (default 200k, 1M and
 * 3M folders; bench/lib/import-data.ts) through the built CLI into a fresh database of each
 * backend, and reports folders/s by the wall clock of the whole command and the importer's
 * peak resident memory (sampled from /proc every 50 ms). PostgreSQL runs when
 * BENCH_DATABASE_URL or TEST_DATABASE_URL names a server whose role may create databases.
 * Data files are kept under IMPORT_BENCH_DIR (default /tmp/folder-service-import-bench).
 */

const DIR = process.env.IMPORT_BENCH_DIR ?? '/tmp/folder-service-import-bench'
const HELP = `usage: npm run bench:import [-- SIZES...]
  SIZES        folder counts to import, each a whole number of at least 1 (default 200000 1000000 3000000)
  -h, --help   this text
PostgreSQL runs too when BENCH_DATABASE_URL or TEST_DATABASE_URL is set; data files are kept under IMPORT_BENCH_DIR.
`

/** The sizes asked for, or null when --help was: a flag or a size that is not a count exits 2. */
function parseSizes(argv: string[]): number[] | null {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: { help: { type: 'boolean', short: 'h' } },
    })
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${HELP}`)
    process.exit(2)
  }
  if (parsed.values.help === true) return null
  for (const size of parsed.positionals) {
    if (!/^[1-9][0-9]*$/.test(size)) {
      process.stderr.write(`not a folder count: '${size}'\n${HELP}`)
      process.exit(2)
    }
  }
  return parsed.positionals.map(Number)
}

const sizes = parseSizes(process.argv.slice(2))
if (sizes === null) {
  process.stdout.write(HELP)
  process.exit(0)
}
const SIZES = sizes.length > 0 ? sizes : [200_000, 1_000_000, 3_000_000]
const PG_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL

interface Run {
  seconds: number
  peakBytes: number
  stdout: string
}

function runImport(file: string, db: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [CLI, 'import', file, '--db', db], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    let peakBytes = 0
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const sampler = setInterval(() => {
      const rss = child.pid === undefined ? null : readRss(child.pid)
      if (rss !== null) peakBytes = Math.max(peakBytes, rss)
    }, 50)
    child.on('error', reject)
    child.on('close', (code) => {
      clearInterval(sampler)
      const seconds = (performance.now() - started) / 1000
      if (code !== 0) reject(new Error(`import failed (${code}): ${stderr.trim()}`))
      else resolve({ seconds, peakBytes, stdout: stdout.trim() })
    })
  })
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`

async function main(): Promise<void> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build first`)
  mkdirSync(DIR, { recursive: true })
  console.log('backend   folders    file      wall s   folders/s   peak RSS')
  for (const size of SIZES) {
    const file = join(DIR, `folders-${size}.json`)
    if (!existsSync(file)) await writeImportFile(file, size)
    const fileSize = mb(statSync(file).size)
    const backends: {
      name: string
      open: () => Promise<{ url: string; dispose: () => Promise<unknown> }>
    }[] = [
      {
        name: 'sqlite',
        open: () => {
          const path = join(DIR, `bench-${size}.db`)
          const remove = () => ['', '-wal', '-shm'].forEach((end) => rmSync(path + end, { force: true }))
          remove()
          return Promise.resolve({ url: `sqlite:${path}`, dispose: () => Promise.resolve(remove()) })
        },
      },
    ]
    if (PG_URL !== undefined) {
      backends.push({
        name: 'postgres',
        open: async () => {
          const db = await benchDatabase(PG_URL)
          return { url: db.url, dispose: () => db.dispose([]) }
        },
      })
    }
    for (const backend of backends) {
      const db = await backend.open()
      try {
        const run = await runImport(file, db.url)
        const rate = Math.round(size / run.seconds)
        console.log(
          `${backend.name.padEnd(9)} ${String(size).padStart(8)} ${fileSize.padStart(8)} ${run.seconds.toFixed(1).padStart(8)} ${rate.toLocaleString('en-US').padStart(11)} ${mb(run.peakBytes).padStart(10)}`,
        )
      } finally {
        await db.dispose()
      }
    }
  }
}

await main()
