import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { ensureBuilt } from '../harness/build.js'
import { generateDataSet } from './lib/dataset.js'
import { runLoad, type LoadResult } from './lib/load.js'
import { benchDatabase, withClient } from './lib/postgres.js'
import { readCpuSeconds } from './lib/process-stats.js'
import { freePort, HOST, stopAllChildren, stopChild } from './lib/processes.js'
import { waitForReplay } from '../harness/replay.js'
import { importData, SERVICE_ENV, startService } from './lib/service.js'
import { mixedTargets } from './lib/targets.js'

/**
 * `npm run bench:replicas`: the same uncached listing load against one service instance,
 * first with the primary alone, then with one streaming replica (DATABASE_READ_URLS), and
 * what each costs the primary. The listing cache is off (LISTING_CACHE_MB=0), so every request
 * reads its page and count: the load a cache cannot absorb (many distinct pages).
 *
 * Needs TEST_DATABASE_URL (a role with CREATEDB) and TEST_DATABASE_READ_URL (its replica, as
 * .ci/postgres-replica.sh makes). Reports, per phase: requests per second; where the listing
 * reads were served and the statements the primary was sent per request (the service's
 * /metrics); the CPU seconds per request of the primary's and the replica's server processes
 * for the bench database (pg_stat_activity pids, /proc) and of the service.
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => process.stdout.write(`${line}\n`)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 15)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)

/** CPU seconds used so far by each server process connected to `database` at `url`. */
async function backendCpu(url: string, database: string): Promise<Map<number, number>> {
  const { rows } = await withClient(url, (client) =>
    client.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
      [database],
    ),
  )
  return new Map(rows.map(({ pid }): [number, number] => [pid, readCpuSeconds(pid) ?? 0]))
}

/** CPU used between two samples; a process that appeared between them counts whole. */
const cpuBetween = (start: Map<number, number>, end: Map<number, number>) =>
  [...end].reduce((sum, [pid, cpu]) => sum + cpu - (start.get(pid) ?? 0), 0)

/** One series of the service's /metrics text, summed over the lines that match `prefix`. */
function sumSeries(text: string, prefix: string): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith(prefix))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0)
}

interface Phase {
  name: string
  load: LoadResult
  primaryReads: number
  replicaReads: number
  primaryStatements: number
  primaryCpu: number
  replicaCpu: number
  serviceCpu: number
}

async function phase(
  name: string,
  url: string,
  readUrl: string | null,
  targets: ReturnType<typeof mixedTargets>,
): Promise<Phase> {
  const port = await freePort()
  const database = new URL(url).pathname.slice(1)
  const env = {
    ...process.env,
    ...SERVICE_ENV,
    LISTING_CACHE_MB: '0',
    DATABASE_READ_URLS: readUrl ?? '',
  }
  const service = await startService({ root, url, port, env })
  try {
    const scrape = async () => (await fetch(`http://${HOST}:${port}/metrics`)).text()
    await runLoad({ port, targets, connections: CONNECTIONS, pipelining: 1, seconds: 3, verifyEvery: 0 })
    const metricsBefore = await scrape()
    const [primaryBefore, replicaBefore] = await Promise.all([
      backendCpu(url, database),
      readUrl === null ? new Map<number, number>() : backendCpu(readUrl, database),
    ])
    const serviceBefore = readCpuSeconds(service.pid) ?? 0
    const load = await runLoad({
      port,
      targets,
      connections: CONNECTIONS,
      pipelining: 1,
      seconds: SECONDS,
      verifyEvery: 10,
    })
    const serviceCpu = (readCpuSeconds(service.pid) ?? 0) - serviceBefore
    const [primaryAfter, replicaAfter] = await Promise.all([
      backendCpu(url, database),
      readUrl === null ? new Map<number, number>() : backendCpu(readUrl, database),
    ])
    const metricsAfter = await scrape()
    const delta = (prefix: string) => sumSeries(metricsAfter, prefix) - sumSeries(metricsBefore, prefix)
    return {
      name,
      load,
      primaryReads: delta('db_reads_total{target="primary"'),
      replicaReads: delta('db_reads_total{target="replica"'),
      primaryStatements: delta('db_primary_statements_total'),
      primaryCpu: cpuBetween(primaryBefore, primaryAfter),
      replicaCpu: cpuBetween(replicaBefore, replicaAfter),
      serviceCpu,
    }
  } finally {
    await stopChild(service)
  }
}

function report(p: Phase): void {
  const n = p.load.requests
  const perRequest = (seconds: number) => `${((seconds / n) * 1e6).toFixed(0)} µs`
  const reads = p.primaryReads + p.replicaReads
  log(`  ${p.name}:`)
  log(
    `    ${p.load.reqPerSec.toFixed(0)} req/s, p50 ${p.load.latencyMs.p50} ms, p99 ${p.load.latencyMs.p99} ms; ` +
      `${n} requests, non-2xx ${p.load.non2xx}, errors ${p.load.errors}, wrong bodies ${p.load.wrong} of ${p.load.verified} checked`,
  )
  log(
    `    listing reads: ${reads}, on the replica ${((100 * p.replicaReads) / Math.max(1, reads)).toFixed(1)}%; ` +
      `statements sent to the primary per request: ${(p.primaryStatements / n).toFixed(3)}`,
  )
  log(
    `    CPU per request: primary ${perRequest(p.primaryCpu)}, replica ${perRequest(p.replicaCpu)}, ` +
      `service ${perRequest(p.serviceCpu)}`,
  )
}

async function main(): Promise<void> {
  const primaryBase = process.env.TEST_DATABASE_URL ?? ''
  const replicaBase = process.env.TEST_DATABASE_READ_URL ?? ''
  if (primaryBase === '' || replicaBase === '') {
    throw new Error('set TEST_DATABASE_URL and TEST_DATABASE_READ_URL (.ci/postgres-replica.sh)')
  }
  const build = ensureBuilt(root, true)
  log(`build: ${build.action}${build.warning === undefined ? '' : `\n${build.warning}`}`)
  const db = await benchDatabase(primaryBase)
  if (db.mode !== 'fresh database') throw new Error('the role of TEST_DATABASE_URL needs CREATEDB')
  const dir = mkdtempSync(join(tmpdir(), 'folder-service-replica-bench-'))
  const readUrl = new URL(replicaBase)
  readUrl.pathname = new URL(db.url).pathname
  try {
    const data = generateDataSet(join(dir, 'data.json'), {
      users: 40,
      rootFolders: 400,
      smallFolders: 100,
      huge: 0,
      seed: 20,
      parents: 4,
    })
    await importData({
      root,
      file: data.file,
      folders: data.counts.folders,
      url: db.url,
      timeoutSeconds: 600,
      log,
    })
    await waitForReplay(db.url, readUrl.toString(), 60_000)
    const targets = mixedTargets([...data.roots, ...data.parents.flat()], 10, 20)
    log(
      `replica bench: ${data.counts.folders} folders, ${targets.length} distinct pages (limit 10), ` +
        `listing cache off, ${CONNECTIONS} connections, ${SECONDS} s a phase, ${cpus().length} cores ` +
        '(the service, the load, the primary and the replica all share them)',
    )
    report(await phase('primary alone', db.url, null, targets))
    await sleep(1000)
    report(await phase('one replica', db.url, readUrl.toString(), targets))
  } finally {
    await stopAllChildren()
    rmSync(dir, { recursive: true, force: true })
    const warning = await db.dispose([])
    if (warning !== null) log(warning)
  }
}

main().catch((error: unknown) => {
  log(`bench:replicas failed: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = 1
})
