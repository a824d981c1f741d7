import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { openRawSql } from '../harness/raw-sql.js'
import { onEachBackend, runBenchCommand } from './lib/command.js'
import { readCpuSeconds, readRss } from './lib/process-stats.js'
import { freePort, HOST, stopChild } from './lib/processes.js'
import { importData, SERVICE_ENV, startService } from './lib/service.js'
import { fanoutUsers, runFanout, writeFanoutData, type WakeFigures } from './lib/fanout.js'

/**
 * `npm run bench:feed`: what the changes feed costs, on each backend.
 *
 * - draining 1,000 changes (renames made by raw SQL) of a 100,000-child folder, one
 *   answer of limit 1000, against one uncached listing page of that folder (limit 100);
 * - WAITERS followers in one process, first as held requests (wait=60), then as event
 *   streams: the service's memory above the idle process, its CPU while nothing changes,
 *   and the time from a raw-SQL commit to each follower's receipt (p50, p99), with the CPU
 *   the service and the load generator (this process, apart from the service) used
 *   meanwhile, so the figure says how much is the service's.
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => process.stdout.write(`${line}\n`)
const USER = 'fe000000-0000-4000-8000-000000000001'
const SESSION = 'fe000000-0000-4000-8000-000000005e55'
const HUGE = 'fe000000-0000-4000-8000-0000000f0000'
const CHANGES = 1000
const SAMPLES = 30
const IDLE_SECONDS = 10
/** longest the bench waits for every follower to hear of the commit */
const RECEIPT_TIMEOUT_MS = 30_000

const childId = (n: number) => `fe000001-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

function writeDataFile(file: string, huge: number): number {
  const folders: object[] = [{ id: HUGE, name: 'huge', owner_id: USER }]
  for (let i = 0; i < huge; i++) {
    folders.push({
      id: childId(i),
      name: `item ${((i * 7919) % huge).toString().padStart(7, '0')}`,
      owner_id: USER,
      folder_id: HUGE,
    })
  }
  writeFileSync(
    file,
    JSON.stringify({
      users: [{ id: USER, username: 'feed' }],
      sessions: [{ id: SESSION, user_id: USER }],
      folders,
    }),
  )
  return folders.length
}

interface Answer {
  ms: number
  status: number
  body: string
}

function get(port: number, path: string, agent: Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = request(
      { host: HOST, port, path, agent, headers: { cookie: `session_id=${SESSION}` } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () =>
          resolve({
            ms: performance.now() - started,
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
          }),
        )
      },
    )
    req.on('error', reject)
    req.end()
  })
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN
}

export interface FeedFigures {
  backend: string
  listingPageP50Ms: number
  drainP50Ms: number
  drainEntries: number
  followers: FollowerFigures[]
}

export interface FollowerFigures {
  kind: 'long-poll' | 'sse'
  waiters: number
  idleRssMb: number
  rssAboveIdleMb: number
  idleCpuPercent: number
  commitToReceiptP50Ms: number
  commitToReceiptP99Ms: number
  received: number
  failed: number
  /** the load generator's (this process's) CPU from the commit to the last receipt, in cores */
  generatorCores: number
  /** the service's CPU over the same time, in cores */
  serviceCores: number
  /** the service's CPU seconds from the commit to the last receipt: its work for one wake */
  serviceCpuSeconds: number
}

/**
 * One follower on its own connection: a held request (wait=60), or an event stream whose
 * second `changes` event is the one the commit causes. Resolves when the change arrived.
 */
function follower(
  port: number,
  path: string,
  kind: FollowerFigures['kind'],
  opened: () => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { cookie: `session_id=${SESSION}` }
    if (kind === 'sse') headers.accept = 'text/event-stream'
    const req = request(
      { host: HOST, port, path: kind === 'sse' ? path : `${path}&wait=60`, agent: false, headers },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`${kind}: ${res.statusCode}`))
        let events = 0
        let announced = false
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          if (kind !== 'sse') return
          events += chunk.split('event: changes').length - 1
          if (events >= 1 && !announced) {
            announced = true
            opened()
          }
          if (events >= 2) {
            resolve()
            res.destroy()
          }
        })
        res.on('end', () => (kind === 'sse' ? reject(new Error('the stream ended')) : resolve()))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

async function follow(settings: {
  port: number
  pid: number
  sql: Awaited<ReturnType<typeof openRawSql>>
  path: string
  kind: FollowerFigures['kind']
  waiters: number
}): Promise<FollowerFigures> {
  const { port, pid, sql, path, kind, waiters } = settings
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const idleRss = readRss(pid) ?? Number.NaN
  const receivedAt: number[] = []
  let failed = 0
  let firstFailure = ''
  const done: Promise<void>[] = []
  let open = 0
  for (let i = 0; i < waiters; i++) {
    done.push(
      follower(port, path, kind, () => open++).then(
        () => void receivedAt.push(performance.now()),
        (error: unknown) => {
          failed++
          firstFailure ||= String(error)
        },
      ),
    )
    // paced, so that connections are not refused by a full accept queue
    if (i % 250 === 249) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  // Idle means set up: every stream has its first event (bounded: a minute at most).
  for (let waited = 0; kind === 'sse' && open + failed < waiters && waited < 60; waited++) {
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
  if (kind === 'sse' && open < waiters) log(`  ${open} of ${waiters} streams had their first event`)
  await new Promise((resolve) => setTimeout(resolve, 5000))
  if (receivedAt.length > 0)
    throw new Error(`${receivedAt.length} ${kind} followers answered before any change`)
  const heldRss = readRss(pid) ?? Number.NaN
  const cpuBefore = readCpuSeconds(pid) ?? Number.NaN
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000))
  const cpuAfter = readCpuSeconds(pid) ?? Number.NaN
  const generatorCpu = process.cpuUsage()
  const serviceCpu = readCpuSeconds(pid) ?? Number.NaN
  const committed = performance.now()
  await sql.run('UPDATE folders SET name = ? WHERE id = ?', `wake ${randomUUID()}`, childId(1))
  // Bounded: a follower that never hears of the change counts as missed, not as a hang.
  await Promise.race([Promise.all(done), new Promise((resolve) => setTimeout(resolve, RECEIPT_TIMEOUT_MS))])
  const elapsed = (performance.now() - committed) / 1000
  const generator = process.cpuUsage(generatorCpu)
  const service = (readCpuSeconds(pid) ?? Number.NaN) - serviceCpu
  const delays = receivedAt.map((at) => at - committed)
  if (failed > 0) log(`  ${failed} ${kind} followers failed (first: ${firstFailure})`)
  const missed = waiters - failed - delays.length
  if (missed > 0)
    log(`  ${missed} ${kind} followers had not heard of the commit ${RECEIPT_TIMEOUT_MS} ms after it`)
  return {
    kind,
    waiters,
    idleRssMb: idleRss / 2 ** 20,
    rssAboveIdleMb: (heldRss - idleRss) / 2 ** 20,
    idleCpuPercent: ((cpuAfter - cpuBefore) / IDLE_SECONDS) * 100,
    commitToReceiptP50Ms: quantile(delays, 0.5),
    commitToReceiptP99Ms: quantile(delays, 0.99),
    received: delays.length,
    failed,
    generatorCores: (generator.user + generator.system) / 1e6 / elapsed,
    serviceCores: service / elapsed,
    serviceCpuSeconds: service,
  }
}

async function measure(
  backend: string,
  url: string,
  data: { file: string; folders: number },
  waiters: number,
): Promise<FeedFigures> {
  const huge = data.folders - 1
  await importData({ root, url, ...data, timeoutSeconds: 900, log })
  const serve = async () => {
    const port = await freePort()
    // Every held request is one session's, on a connection of its own: both bounds raised to
    // hold them all, the connection limit above the held requests, as the service requires.
    const env = {
      ...process.env,
      ...SERVICE_ENV,
      LONG_POLL_MAX_WAITERS: String(waiters),
      LONG_POLL_PER_SESSION: String(waiters),
      MAX_CONNECTIONS: String(2 * waiters + 100),
    }
    return { port, service: await startService({ root, url, port, env }) }
  }
  const { port, service } = await serve()
  const sql = await openRawSql(url)
  const one = new Agent({ keepAlive: true, maxSockets: 1 })
  try {
    const changesPath = `/v1/folders/changes?folder_id=${HUGE}`
    const start = JSON.parse((await get(port, changesPath, one)).body) as { cursor: string }
    // 1,000 renames, each its own transaction, as another service would make them.
    for (let i = 0; i < CHANGES; i++) {
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', `renamed ${i}`, childId((i * 97) % huge))
    }
    const listing: number[] = []
    const drains: number[] = []
    let entries = 0
    for (let i = 0; i < SAMPLES; i++) {
      // a limit never asked before: the listing cache cannot answer
      const page = await get(port, `/v1/folders?folder_id=${HUGE}&limit=${100 - i}`, one)
      if (page.status !== 200) throw new Error(`listing: ${page.status}`)
      listing.push(page.ms)
      const drain = await get(port, `${changesPath}&cursor=${start.cursor}&limit=1000`, one)
      if (drain.status !== 200) throw new Error(`changes: ${drain.status} ${drain.body}`)
      entries = (JSON.parse(drain.body) as { changes: unknown[] }).changes.length
      drains.push(drain.ms)
    }

    // Followers, all on the present position of the same owner's folder: long-poll, then
    // SSE, each kind on a fresh process, so that neither inherits the other's memory.
    const present = JSON.parse((await get(port, changesPath, one)).body) as { cursor: string }
    const path = `${changesPath}&cursor=${present.cursor}`
    const followers: FollowerFigures[] = []
    for (const kind of ['long-poll', 'sse'] as const) {
      const fresh = await serve()
      try {
        followers.push(await follow({ port: fresh.port, pid: fresh.service.pid, sql, path, kind, waiters }))
      } finally {
        await stopChild(fresh.service)
      }
    }
    return {
      backend,
      listingPageP50Ms: quantile(listing, 0.5),
      drainP50Ms: quantile(drains, 0.5),
      drainEntries: entries,
      followers,
    }
  } finally {
    one.destroy()
    await sql.close()
    await stopChild(service)
  }
}

function report(f: FeedFigures): void {
  log(`== ${f.backend}`)
  log(`  one uncached listing page (limit 100) of the huge folder, p50   ${f.listingPageP50Ms.toFixed(2)} ms`)
  log(
    `  drain of ${f.drainEntries} changes (one answer, limit 1000), p50         ${f.drainP50Ms.toFixed(2)} ms  (${(f.drainP50Ms / f.listingPageP50Ms).toFixed(2)}x the page)`,
  )
  for (const w of f.followers) {
    log(
      `  ${w.waiters} ${w.kind} followers: memory above idle (${w.idleRssMb.toFixed(0)} MB)   ${w.rssAboveIdleMb.toFixed(1)} MB  (target < 100 MB)`,
    )
    log(
      `  ${w.waiters} ${w.kind} followers: CPU while nothing changes          ${w.idleCpuPercent.toFixed(2)} % of a core  (target < 5 %)`,
    )
    log(
      `  ${w.kind}: commit to receipt (${w.received} received, ${w.failed} failed)   p50 ${w.commitToReceiptP50Ms.toFixed(0)} ms, p99 ${w.commitToReceiptP99Ms.toFixed(0)} ms  (target p99 < 1000 ms); meanwhile the service used ${w.serviceCores.toFixed(2)} cores (${w.serviceCpuSeconds.toFixed(2)} CPU s), the load generator ${w.generatorCores.toFixed(2)} cores`,
    )
  }
}

export async function runFeedBench(settings: {
  huge: number
  waiters: number
  backend: 'all' | 'sqlite' | 'postgres'
  postgresUrl: string | null
}): Promise<FeedFigures[]> {
  const { huge, waiters, backend, postgresUrl } = settings
  log(
    `changes feed: one folder of ${huge.toLocaleString('en')} children, ${CHANGES} changes, ${waiters} held requests`,
  )
  return onEachBackend({
    name: 'feed',
    backend,
    postgresUrl,
    users: [USER],
    prepare: (tmp) => {
      const file = join(tmp, 'feed.json')
      return { file, folders: writeDataFile(file, huge) }
    },
    measure: (label, url, data) => measure(label, url, data, waiters),
    report,
    log,
  })
}

/** The tree feed's fan-out (bench/lib/fanout.ts) on each backend. */
export async function runFanoutBench(settings: {
  backend: 'all' | 'sqlite' | 'postgres'
  postgresUrl: string | null
  followers: number
  commits: number
  rate: number
  stalled: number
  workers: number
  oneUser: boolean
  floor: number
  profile: boolean
}): Promise<WakeFigures[][]> {
  const { backend, postgresUrl, followers, commits, rate, stalled, workers, oneUser, floor, profile } =
    settings
  log(
    `tree feed fan-out: ${followers} followers, ${commits} commits; ${followers / 2} users at ${rate} commits/s; a stream that never reads, ${stalled} renames; ${workers} worker(s)`,
  )
  return onEachBackend({
    name: 'fanout',
    backend,
    postgresUrl,
    users: fanoutUsers(followers),
    prepare: (tmp) => {
      const file = join(tmp, 'fanout.json')
      return { file, folders: writeFanoutData(file, followers), tmp }
    },
    measure: async (label, url, data) => {
      log(`== ${label}`)
      await importData({ root, url, file: data.file, folders: data.folders, timeoutSeconds: 900, log })
      const profileDir = profile ? join(root, 'bench', 'results', `profile-fanout-${Date.now()}`) : null
      return runFanout({
        root,
        url,
        followers,
        commits,
        rate,
        stalled,
        workers,
        withOneUser: oneUser,
        floor,
        profileDir,
      })
    },
    report: () => undefined,
    log,
  })
}

async function main(): Promise<void> {
  const options = {
    waiters: '10000',
    changes: '1',
    fanout: '10000',
    commits: '8',
    rate: '500',
    stalled: '4000',
    workers: '1',
    oneuser: '1',
    floor: '1',
    profile: '0',
  }
  await runBenchCommand(options, async ({ huge, backend, postgresUrl, numbers }) => {
    // --changes 0: the fan-out alone; --fanout 0: the changes feed alone
    if (numbers.changes !== 0)
      await runFeedBench({ huge, waiters: numbers.waiters ?? 10_000, backend, postgresUrl })
    const followers = numbers.fanout ?? 10_000
    if (followers > 0)
      await runFanoutBench({
        backend,
        postgresUrl,
        followers: followers - (followers % 2),
        commits: numbers.commits ?? 8,
        rate: numbers.rate ?? 500,
        stalled: numbers.stalled ?? 4000,
        workers: numbers.workers ?? 1,
        // --oneuser 0: not the one-user SSE and long-poll scenarios
        oneUser: numbers.oneuser !== 0,
        // --floor 0: not the one-user scenarios again on a bare node:http server; 2: long-polls
        // also answered by one socket write each
        floor: numbers.floor ?? 1,
        profile: numbers.profile === 1,
      })
  })
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main()
