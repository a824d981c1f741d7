/**
 * Soak run: the built service under steady mixed load for minutes, watching for errors and
 * for memory that keeps growing.
 *
 *   npm run soak -- --minutes 10           (or --seconds 30; default 60 seconds)
 *   npm run soak -- --minutes 5 --db postgres://user:pass@host/db
 *
 * What it does:
 * 1. builds dist/ when it is missing or older than src/;
 * 2. writes a moderate data set (--users users, each with a root of folders, several parents
 *    with a hundred children, some deleted folders) and loads it with the built CLI's
 *    `import` (the import path), into a temporary SQLite file unless --db is given;
 * 3. starts `serve` (rate limits off) and drives it with autocannon: own listings on
 *    rotating sessions, folders, pages and limits (200), conditional repeats (304), and the
 *    expected client errors - another user's or a deleted folder (404), no or an unknown
 *    session (401), a malformed page (400) - counted per kind. Each request carries its kind
 *    in X-Request-Id, which the service echoes, so every answer is checked against the
 *    status its kind must get;
 * 4. meanwhile runs bench/lib/writer.ts as a second process that writes straight into the same
 *    database at --write-rate writes/s (default 100; 0: none): inserts, renames and deletes
 *    among the children of each user's first folder, each its own transaction, each followed
 *    by a listing that must show it. Every write changes its owner's listing generation, so
 *    the cache keeps filling with new entries while the old ones age out: the soak checks
 *    that memory stays bounded (LISTING_CACHE_MB plus a flat base) under that churn;
 * 5. samples the service's RSS every --sample-seconds and prints it with the counts;
 * 6. stops the service with SIGTERM and expects exit code 0.
 *
 * Exit code 1 when: any answer has a status other than its kind's (a 5xx included), any
 * socket error or timeout, a write fails or a listing after it is stale, the service exits
 * early or not cleanly, or memory keeps growing.
 * "Keeps growing": after the warm-up (the first --warmup-seconds, at most a fifth of the
 * run), the median RSS of the last third of the samples exceeds the median of the first
 * third by more than --max-growth-mb (default 50 MB) AND by more than --max-growth-percent
 * (default 30 %). Generous on purpose: V8 grows its heap in steps and returns memory
 * lazily, so only a steady climb beyond both margins counts as a leak.
 */

import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { Result } from 'autocannon'
import { ensureBuilt } from '../harness/build.js'
import { generateDataSet, type DataSet } from './lib/dataset.js'
import { autocannonLoad, stopLoad } from './lib/load.js'
import { readRss } from './lib/process-stats.js'
import { freePort, hasExited, stopAllChildren, withTimeout } from './lib/processes.js'
import { importData, startService } from './lib/service.js'
import { memoryVerdict, type Sample } from '../harness/soak-memory.js'
import { startWriter, writerUsers } from './lib/write-phase.js'
import type { WriterPlan } from './lib/writer.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** FOLDER_SERVICE_CLI soaks another build (e.g. a deliberately broken copy); never rebuilt. */
const OTHER_CLI = process.env.FOLDER_SERVICE_CLI

// Every child (import, service, writer) inherits this environment: no test runner's
// variables, no NODE_OPTIONS, and no DATABASE_URL, as each is given its database.
delete process.env.NODE_OPTIONS
delete process.env.DATABASE_URL
for (const name of Object.keys(process.env)) if (name.startsWith('NODE_TEST')) delete process.env[name]

interface Settings {
  seconds: number
  db: string | undefined
  connections: number
  /** requests per second overall; 0: as fast as the service answers */
  rate: number
  /** writes per second of the writer process; 0: no writer */
  writeRate: number
  users: number
  sampleSeconds: number
  warmupSeconds: number
  maxGrowthMb: number
  maxGrowthPercent: number
}

function settings(): Settings {
  const { values } = parseArgs({
    options: {
      minutes: { type: 'string' },
      seconds: { type: 'string' },
      db: { type: 'string' },
      connections: { type: 'string', default: '8' },
      rate: { type: 'string', default: '0' },
      'write-rate': { type: 'string', default: '100' },
      users: { type: 'string', default: '20' },
      'sample-seconds': { type: 'string' },
      'warmup-seconds': { type: 'string' },
      'max-growth-mb': { type: 'string', default: '50' },
      'max-growth-percent': { type: 'string', default: '30' },
      help: { type: 'boolean', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(
      'usage: npm run soak -- [--minutes N | --seconds N] [--db URL] [--connections N] [--rate N/s]\n' +
        '                       [--write-rate N/s (default 100; 0: no writer process)]\n' +
        '                       [--users N] [--sample-seconds N] [--warmup-seconds N]\n' +
        '                       [--max-growth-mb N] [--max-growth-percent N]\n',
    )
    process.exit(0)
  }
  const number = (name: string, text: string | undefined, fallback: number, min = 0): number => {
    if (text === undefined) return fallback
    const n = Number(text)
    if (!Number.isFinite(n) || n < min)
      throw new Error(`--${name}: expected a number >= ${min}, got '${text}'`)
    return n
  }
  const seconds =
    values.minutes !== undefined
      ? number('minutes', values.minutes, 1, 0.05) * 60
      : number('seconds', values.seconds, 60, 3)
  return {
    seconds,
    db: values.db,
    connections: number('connections', values.connections, 8, 1),
    rate: number('rate', values.rate, 0),
    writeRate: number('write-rate', values['write-rate'], 100),
    users: number('users', values.users, 20, 2),
    // About 20 samples in a short run, one every 5 s in a long one.
    sampleSeconds: number(
      'sample-seconds',
      values['sample-seconds'],
      Math.min(5, Math.max(0.5, seconds / 20)),
      0.2,
    ),
    warmupSeconds: Math.min(number('warmup-seconds', values['warmup-seconds'], 10), seconds / 5),
    maxGrowthMb: number('max-growth-mb', values['max-growth-mb'], 50),
    maxGrowthPercent: number('max-growth-percent', values['max-growth-percent'], 30),
  }
}

// ---------------------------------------------------------------- data

/**
 * Users with a root of 40 folders (one more deleted), 5 of which hold 100 children each (2
 * more deleted): the writer process writes among the first parent's children.
 */
function writeDataSet(dir: string, users: number): DataSet {
  return generateDataSet(join(dir, 'soak-data.json'), {
    users,
    rootFolders: 40,
    smallFolders: 100,
    parents: 5,
    huge: 0,
    seed: 1,
  })
}

// ---------------------------------------------------------------- the load

const KINDS = {
  own: { weight: 76, expect: 200 },
  revalidated: { weight: 4, expect: 304 },
  foreign: { weight: 5, expect: 404 },
  deleted: { weight: 3, expect: 404 },
  anonymous: { weight: 3, expect: 401 },
  unknownSession: { weight: 3, expect: 401 },
  badPage: { weight: 6, expect: 400 },
} as const
type Kind = keyof typeof KINDS

const SCHEDULE: Kind[] = Object.entries(KINDS).flatMap(([kind, { weight }]) =>
  Array.from({ length: weight }, () => kind as Kind),
)

interface Counts {
  byKind: Record<Kind, number>
  byStatus: Record<string, number>
  unexpected: string[]
  unexpectedCount: number
}

/** A folder with children: what own and foreign listings ask for. */
type Parent = DataSet['small'][number]

function requestFor(n: number, data: DataSet): { path: string; headers: Record<string, string> } {
  // A stride coprime with the schedule's length spreads the kinds over time.
  const kind = SCHEDULE[(n * 37) % SCHEDULE.length] as Kind
  const users = data.parents.length
  const u = n % users
  const own = data.parents[u] as Parent[]
  const session = (own[0] as Parent).sessionId
  const parent = n % 6 === 0 ? undefined : (own[n % own.length] as Parent).folderId
  const limit = [10, 25, 50, 100][n % 4] as number
  const page = 1 + (n % 3)
  const query = new URLSearchParams({ page: String(page), limit: String(limit) })
  let cookie: string | undefined = `session_id=${session}`
  const headers: Record<string, string> = { 'x-request-id': `soak-${kind}-${n}` }
  switch (kind) {
    case 'own':
    case 'revalidated':
      if (parent !== undefined) query.set('folder_id', parent)
      if (kind === 'revalidated') headers['if-none-match'] = '*'
      break
    case 'foreign':
      query.set('folder_id', (data.small[(u + 1) % users] as Parent).folderId)
      break
    case 'deleted':
      query.set('folder_id', data.deleted[u] as string)
      break
    case 'anonymous':
      cookie = undefined
      break
    case 'unknownSession':
      cookie = `session_id=${randomBytes(16)
        .toString('hex')
        .replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5')}`
      break
    case 'badPage':
      query.set('page', ['0', '-1', 'abc', '1e2'][n % 4] as string)
      break
  }
  if (cookie !== undefined) headers.cookie = cookie
  return { path: `/v1/folders?${query.toString()}`, headers }
}

/** The mixed load; every answer is checked against the status its kind must get. */
function runSoakLoad(port: number, s: Settings, data: DataSet, counts: Counts): Promise<Result> {
  let n = 0
  return autocannonLoad({
    port,
    connections: s.connections,
    pipelining: 1,
    seconds: s.seconds,
    rate: s.rate,
    next: () => requestFor(n++, data),
    onResponse: (status, body, _context, headers) => {
      const echoed = headers['x-request-id']
      const id = typeof echoed === 'string' ? echoed : ''
      const kind = /^soak-([A-Za-z]+)-\d+$/.exec(id)?.[1] as Kind | undefined
      counts.byStatus[status] = (counts.byStatus[status] ?? 0) + 1
      if (kind === undefined || !(kind in KINDS)) {
        note(counts, `${status} for a request whose id came back as '${id}'`)
        return
      }
      counts.byKind[kind]++
      if (status !== KINDS[kind].expect) {
        note(counts, `${kind} (${id}): expected ${KINDS[kind].expect}, got ${status} ${body.slice(0, 200)}`)
      } else if (status === 200 && !body.startsWith('{"folders":')) {
        note(counts, `${kind} (${id}): 200 without a folder list: ${body.slice(0, 200)}`)
      }
    },
  })
}

/** The writer process's plan: writes among the children of each user's first parent. */
function writerPlan(db: string, port: number, s: Settings, data: DataSet): WriterPlan {
  return {
    db,
    port,
    rate: s.writeRate,
    limit: 50,
    seconds: s.seconds + 60,
    seed: 1,
    users: writerUsers(data.small),
  }
}

function note(counts: Counts, message: string): void {
  counts.unexpectedCount++
  if (counts.unexpected.length < 20) counts.unexpected.push(message)
}

// ---------------------------------------------------------------- main

const started = Date.now()
function log(message: string): void {
  process.stdout.write(`[soak ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${message}\n`)
}
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`

async function main(): Promise<number> {
  const s = settings()
  if (OTHER_CLI === undefined) {
    const build = ensureBuilt(ROOT, true)
    log(`dist/: ${build.action}`)
    if (build.warning !== undefined)
      log(`warning: the build failed; soaking the existing dist/\n${build.warning}`)
  }
  const dir = mkdtempSync(join(tmpdir(), 'folder-service-soak-'))
  const failures: string[] = []
  try {
    const db = s.db ?? `sqlite:${join(dir, 'soak.db')}`
    const data = writeDataSet(dir, s.users)
    log(
      `importing ${s.users} users, ${data.counts.folders} folders into ${s.db === undefined ? 'a temporary SQLite file' : 'the given database'}`,
    )
    const imported = await importData({
      root: ROOT,
      file: data.file,
      folders: data.counts.folders,
      url: db,
      timeoutSeconds: 300,
      log,
      cli: OTHER_CLI,
    })
    log(
      `imported ${imported.folders} folders in ${imported.wallSeconds.toFixed(2)} s` +
        (imported.cliSeconds === null ? '' : ` (the CLI says ${imported.cliSeconds.toFixed(2)} s)`),
    )
    const port = await freePort()
    const svc = await startService({ root: ROOT, url: db, port, cli: OTHER_CLI })
    log(
      `service pid ${svc.pid} on port ${port}; ${s.seconds} s of load, ${s.connections} connections` +
        `${s.rate > 0 ? `, ${s.rate} req/s` : ', unthrottled'}; RSS every ${s.sampleSeconds} s, warm-up ${s.warmupSeconds} s`,
    )
    const counts: Counts = {
      byKind: Object.fromEntries(Object.keys(KINDS).map((k) => [k, 0])) as Record<Kind, number>,
      byStatus: {},
      unexpected: [],
      unexpectedCount: 0,
    }
    const samples: Sample[] = []
    const writer =
      s.writeRate > 0 ? startWriter({ root: ROOT, tmp: dir }, writerPlan(db, port, s, data)) : null
    if (writer !== null) log(`writer process: ${s.writeRate} writes/s straight into the database`)
    const loadStarted = Date.now()
    const load = runSoakLoad(port, s, data, counts)
    const sampler = setInterval(() => {
      const rss = readRss(svc.pid)
      if (rss === null) return
      samples.push({ atSeconds: (Date.now() - loadStarted) / 1000, rss })
      const statuses = Object.entries(counts.byStatus)
        .map(([k, v]) => `${k}:${v}`)
        .join(' ')
      log(`rss ${mb(rss).padStart(9)}  answers ${statuses}  unexpected ${counts.unexpectedCount}`)
    }, s.sampleSeconds * 1000)
    // An early exit of the service ends the run at once.
    const crashed = svc.exited.then((status) => {
      if (Date.now() - loadStarted < s.seconds * 1000) {
        failures.push(`the service exited during the load: ${JSON.stringify(status)}\n${svc.output()}`)
        stopLoad()
      }
    })
    const result = await load
    clearInterval(sampler)
    if (writer !== null) {
      const w = await writer.stop()
      log(
        `writer: ${w.writes} writes (${w.writesPerSecond.toFixed(1)}/s: ${w.byKind.insert} inserts, ` +
          `${w.byKind.rename} renames, ${w.byKind.delete} deletes), ${w.writeErrors} failed; ` +
          `${w.checks} listings checked after their write, ${w.stale} stale, ${w.checkFailures} failed`,
      )
      if (w.writes === 0) failures.push('the writer process wrote nothing')
      if (w.stale > 0 || w.writeErrors > 0 || w.checkFailures > 0)
        failures.push(
          `writer: ${w.stale} stale, ${w.writeErrors} failed writes, ${w.checkFailures} failed checks:\n  ${w.examples.join('\n  ')}`,
        )
    }

    log(`load done: ${result.requests.sent} requests, ${result.errors} errors, ${result.timeouts} timeouts`)
    log(`by kind: ${JSON.stringify(counts.byKind)}`)
    log(`by status: ${JSON.stringify(counts.byStatus)} (4xx of the 401/404/400 kinds are expected)`)
    if (result.errors > 0 || result.timeouts > 0) {
      failures.push(`${result.errors} socket errors and ${result.timeouts} timeouts`)
    }
    if (counts.unexpectedCount > 0) {
      failures.push(
        `${counts.unexpectedCount} unexpected answers, first ones:\n  ${counts.unexpected.join('\n  ')}`,
      )
    }
    const answered = Object.values(counts.byStatus).reduce((a, b) => a + b, 0)
    if (answered === 0) failures.push('no request was answered')
    for (const [kind, n] of Object.entries(counts.byKind)) {
      if (answered > 1000 && n === 0) failures.push(`no request of kind ${kind} was sent`)
    }

    const verdict = memoryVerdict(samples, s.warmupSeconds, s.maxGrowthMb, s.maxGrowthPercent)
    const digits = s.seconds < 60 ? 1 : 0
    log(
      `memory over time: ${samples.map((x) => `${x.atSeconds.toFixed(digits)}s=${(x.rss / 1048576).toFixed(0)}`).join(' ')} (MB)`,
    )
    if (verdict === null) {
      failures.push(`too few RSS samples after the warm-up to judge memory (${samples.length} in all)`)
    } else {
      log(
        `memory: median RSS ${mb(verdict.first)} in the first third after warm-up, ${mb(verdict.last)} in the last ` +
          `(allowed: +${s.maxGrowthMb} MB or +${s.maxGrowthPercent}%, whichever is larger)`,
      )
      if (verdict.growing) failures.push(`memory keeps growing: ${mb(verdict.first)} -> ${mb(verdict.last)}`)
    }

    if (!hasExited(svc)) {
      svc.process.kill('SIGTERM')
      const status = await withTimeout(svc.exited, 20_000)
      if (status === 'timeout') failures.push('the service did not stop within 20 s of SIGTERM')
      else if (status.code !== 0)
        failures.push(`the service exited ${JSON.stringify(status)} after SIGTERM\n${svc.output()}`)
    }
    await crashed
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error))
  } finally {
    await stopAllChildren()
    rmSync(dir, { recursive: true, force: true })
  }
  if (failures.length > 0) {
    log(`FAILED:\n- ${failures.join('\n- ')}`)
    return 1
  }
  log('passed: no unexpected status or error, memory steady')
  return 0
}

process.exitCode = await main()
