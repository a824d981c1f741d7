import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { ensureBuilt } from '../harness/build.js'
import { startPgbouncer, type Pgbouncer } from '../harness/pgbouncer.js'
import { insertLiveFolder, openRawSql } from '../harness/raw-sql.js'
import { generateDataSet, type ListedFolder } from './lib/dataset.js'
import { benchDatabase } from './lib/postgres.js'
import { freePort, HOST, stopAllChildren, stopChild, type Child } from './lib/processes.js'
import { importData, SERVICE_ENV, startService } from './lib/service.js'
import { mixedTargets, type Target } from './lib/targets.js'
import { runWrk } from './lib/wrk.js'

/**
 * `npm run bench:pooler`: what a connection pooler in transaction mode costs (CONTRACT 17),
 * in one run, rounds alternated so that the machine's load falls on every variant alike:
 *
 * - the listing load (wrk, the mixed workload of `npm run bench`), cached (LISTING_CACHE_MB at
 *   its default: one session statement a request) and uncached (0: the page and its count too),
 *   on three services over one database: direct (named statements), direct with
 *   DATABASE_POOLER=transaction (the cost of unnamed statements and client-kept timeouts
 *   alone), and through PgBouncer 1.18 with DATABASE_POOLER=transaction (plus the pooler's
 *   hop); the ratios to direct are the figures (targets: cached >= 0.8, uncached >= 0.7);
 * - the feeds' latency, commit to a held request's answer, through PgBouncer with and without
 *   DATABASE_DIRECT_URL (LISTEN, or the poll at LONG_POLL_INTERVAL_MS' default), and direct.
 *
 * Needs TEST_DATABASE_URL (a role with CREATEDB), wrk and pgbouncer (Debian packages). The
 * PgBouncer is a private one of .ci/pgbouncer.sh's stock configuration on a free port.
 * BENCH_SECONDS (default 8) per measured phase, BENCH_ROUNDS (default 3), BENCH_CONNECTIONS
 * (default 32).
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => process.stdout.write(`${line}\n`)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const WARMUP_SECONDS = 2
const FEED_SAMPLES = 15

interface Variant {
  name: string
  url: string
  env: Record<string, string>
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN
const quantile = (values: number[], q: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] ?? NaN

async function serve(variant: Variant, cacheMb: string): Promise<{ child: Child; port: number }> {
  const port = await freePort()
  const env = { ...process.env, ...SERVICE_ENV, ...variant.env, LISTING_CACHE_MB: cacheMb }
  return { child: await startService({ root, url: variant.url, port, env }), port }
}

/** Requests per second of the listing load on `port`, and anything but 200. */
async function listingLoad(port: number, targets: Target[], dir: string) {
  await runWrk({ port, targets, connections: CONNECTIONS, threads: 1, seconds: WARMUP_SECONDS, dir })
  const run = await runWrk({ port, targets, connections: CONNECTIONS, threads: 1, seconds: SECONDS, dir })
  const other = Object.entries(run.statusCodes).filter(([status]) => status !== '200')
  return { reqPerSec: run.reqPerSec, p99: run.latencyMs.p99, other, errors: run.errors }
}

/** Commit (a raw INSERT on the database itself) to a held changes request's answer, in ms. */
async function feedLatency(port: number, folder: ListedFolder & { folderId: string }, directUrl: string) {
  const sql = await openRawSql(directUrl)
  const headers = { cookie: `session_id=${folder.sessionId}` }
  const changes = async (query: string) => {
    const res = await fetch(
      `http://${HOST}:${port}/v1/folders/changes?folder_id=${folder.folderId}&${query}`,
      {
        headers,
      },
    )
    if (res.status !== 200) throw new Error(`changes: ${res.status} ${await res.text()}`)
    return (await res.json()) as { cursor: string; changes: unknown[] }
  }
  try {
    let { cursor } = await changes('')
    const delays: number[] = []
    for (let i = 0; i <= FEED_SAMPLES; i++) {
      const held = changes(`cursor=${cursor}&wait=20`)
      // A different phase of the poll's cycle each time; the first sample opens LISTEN and is dropped.
      await sleep(i === 0 ? 500 : 100 + ((i * 37) % 250))
      const committed = performance.now()
      await insertLiveFolder(sql, {
        id: randomUUID(),
        name: `feed ${i}`,
        parent: folder.folderId,
        owner: folder.ownerId,
        at: Date.now(),
      })
      const answer = await held
      if (i > 0) delays.push(performance.now() - committed)
      cursor = answer.cursor
    }
    return delays
  } finally {
    await sql.close()
  }
}

async function main(): Promise<void> {
  const base = process.env.TEST_DATABASE_URL ?? ''
  if (base === '') throw new Error('set TEST_DATABASE_URL (a role with CREATEDB)')
  const build = ensureBuilt(root, true)
  log(`build: ${build.action}${build.warning === undefined ? '' : `\n${build.warning}`}`)
  const db = await benchDatabase(base)
  if (db.mode !== 'fresh database') throw new Error('the role of TEST_DATABASE_URL needs CREATEDB')
  const dir = mkdtempSync(join(tmpdir(), 'folder-service-pooler-bench-'))
  let bouncer: Pgbouncer | undefined
  try {
    bouncer = await startPgbouncer(base)
    const pooled = bouncer.through(db.url)
    const data = generateDataSet(join(dir, 'data.json'), {
      users: 200,
      rootFolders: 40,
      smallFolders: 120,
      huge: 0,
      seed: 47,
    })
    await importData({
      root,
      file: data.file,
      folders: data.counts.folders,
      url: db.url,
      timeoutSeconds: 600,
      log,
    })
    const targets = mixedTargets([...data.small, ...data.roots], 20, 47, 2)
    const variants: Variant[] = [
      { name: 'direct (named statements)', url: db.url, env: {} },
      { name: 'direct, DATABASE_POOLER=transaction', url: db.url, env: { DATABASE_POOLER: 'transaction' } },
      {
        name: 'PgBouncer 1.18, DATABASE_POOLER=transaction',
        url: pooled,
        env: { DATABASE_POOLER: 'transaction' },
      },
    ]
    log(
      `pooler bench: ${data.counts.folders} folders, ${targets.length} pages (limit 20), ${CONNECTIONS} connections, ` +
        `${SECONDS} s a phase after ${WARMUP_SECONDS} s of warm-up, ${ROUNDS} rounds, ${cpus().length} cores ` +
        `(the service, wrk, PgBouncer and PostgreSQL share them); load average ${loadavg()[0]?.toFixed(1)}`,
    )
    for (const [cache, cacheMb] of [
      ['cached', '64'],
      ['uncached', '0'],
    ] as const) {
      const services = []
      for (const variant of variants) services.push(await serve(variant, cacheMb))
      const rates = variants.map(() => [] as number[])
      try {
        for (let round = 0; round < ROUNDS; round++) {
          for (const [i, service] of services.entries()) {
            const run = await listingLoad(service.port, targets, dir)
            if (run.other.length > 0 || run.errors > 0) {
              throw new Error(`${variants[i]?.name}: answers other than 200: ${JSON.stringify(run.other)}`)
            }
            rates[i]?.push(run.reqPerSec)
          }
        }
      } finally {
        for (const service of services) await stopChild(service.child)
      }
      const directRate = median(rates[0] ?? [])
      log(`\n${cache} listing (load average ${loadavg()[0]?.toFixed(1)} at the end):`)
      for (const [i, variant] of variants.entries()) {
        const rate = median(rates[i] ?? [])
        log(
          `  ${variant.name.padEnd(46)} ${rate.toFixed(0).padStart(6)} req/s  ${(rate / directRate).toFixed(2)}x` +
            `  (rounds: ${(rates[i] ?? []).map((r) => r.toFixed(0)).join(', ')})`,
        )
      }
    }
    const followed = data.small[0]
    if (followed === undefined) throw new Error('the data set has no folder to follow')
    log(`\nfeed latency, commit to a held request's answer (${FEED_SAMPLES} samples each, ms):`)
    for (const variant of [
      variants[2] as Variant,
      {
        ...(variants[2] as Variant),
        name: 'PgBouncer, DATABASE_DIRECT_URL',
        env: { ...variants[2]?.env, DATABASE_DIRECT_URL: db.url },
      },
      variants[0] as Variant,
    ]) {
      const service = await serve(variant, '64')
      try {
        const delays = await feedLatency(service.port, followed, db.url)
        log(
          `  ${variant.name.padEnd(46)} median ${median(delays).toFixed(0)}, p90 ${quantile(delays, 0.9).toFixed(0)}, ` +
            `max ${Math.max(...delays).toFixed(0)}`,
        )
      } finally {
        await stopChild(service.child)
      }
    }
    log(
      `\nload average at the end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')}`,
    )
  } finally {
    await stopAllChildren()
    bouncer?.close()
    rmSync(dir, { recursive: true, force: true })
    const warning = await db.dispose([])
    if (warning !== null) log(warning)
  }
}

main().catch((error: unknown) => {
  log(`bench:pooler failed: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = 1
})
