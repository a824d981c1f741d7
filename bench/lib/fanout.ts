import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { FOLDER_TREE_PATH } from '../../src/api/paths.js'
import { EVENT_LOOP_RESOLUTION_MS } from '../../src/http/metrics.js'
import { readTreeCpuSeconds, readTreeRss } from './process-stats.js'
import { formatProfile, summariseProfiles } from './profile-summary.js'
import { freePort, HOST, spawnChild, stopChild, waitForHttp, type Child } from './processes.js'
import { openRawFollowers, type FollowerKind, type RawFollowerSet } from './raw-followers.js'
import { sharedNow, startRenameWriter, type Commit, type RenameWriter } from './rename-writer.js'
import { SERVICE_ENV, startService } from './service.js'

/**
 * `npm run bench:feed`'s fan-out phase: the tree feed followed by many clients at once, each
 * on its own session and connection (raw sockets, bench/lib/raw-followers.ts), commits made
 * by another process with plain SQL as another service would (rename-writer.ts: each rename
 * its own commit, its folder named after it). A delivery is timed from the moment its
 * commit returned in that process to the bytes that carry the rename reaching the follower.
 * Each scenario on a fresh service:
 *
 * - `sse`: FOLLOWERS event streams of one user, `commits` renames a second apart; from
 *   each commit to each follower's event (p50, p99), the service's CPU per follower woken,
 *   the event loop's delay during the wakes (the service's own `nodejs_eventloop_lag_*`,
 *   reset by a scrape just before each commit), its memory per idle stream;
 * - `long-poll`: FOLLOWERS held requests (`wait=30`) of one user, `commits` renames a second
 *   apart, each request asked again from its answer's cursor on its keep-alive connection;
 * - `many users`: two streams each of FOLLOWERS / 2 users of USER_FOLDERS folders, renames of
 *   a random user's folder spread evenly at `rate` a second for MANY_SECONDS (none skipped,
 *   however far behind the service is; the log grows by each): commit to event per commit
 *   and follower (a user's commits an event's rename follows count as delivered with it).
 *
 * The load generator's CPU and event loop delay (this process) are reported beside the
 * service's: a generator that costs more than the service, or lags, would measure itself.
 */

const log = (line: string) => process.stdout.write(`${line}\n`)
const OWNER = 'fa000000-0000-4000-8000-000000000001'
const FOLDERS = 20
/** longest wait for every follower to hear of one commit */
const RECEIPT_TIMEOUT_MS = 30_000
const MANY_SECONDS = 10
/** after the last delivery of a wake, the time the service gets to finish what follows it before its CPU is read */
const SETTLE_MS = 900
/** root folders of each user of the many-user scenario */
const USER_FOLDERS = 10

const folderId = (n: number) => `fa000001-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
const sessionId = (n: number) => `fa000002-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
const userId = (n: number) => `fa000003-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
const userFolderId = (n: number) => `fa000004-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

/** The owner with FOLDERS root folders and `followers` sessions; `followers / 2` users of USER_FOLDERS folders and two sessions. */
export function writeFanoutData(file: string, followers: number): number {
  const users: object[] = [{ id: OWNER, username: 'fanout' }]
  const sessions: object[] = []
  const folders: object[] = []
  for (let i = 0; i < FOLDERS; i++) folders.push({ id: folderId(i), name: `folder ${i}`, owner_id: OWNER })
  for (let i = 0; i < followers; i++) sessions.push({ id: sessionId(i), user_id: OWNER })
  for (let u = 0; u < followers / 2; u++) {
    users.push({ id: userId(u), username: `follower${u}` })
    for (let f = 0; f < USER_FOLDERS; f++)
      folders.push({ id: userFolderId(u * USER_FOLDERS + f), name: `folder ${f}`, owner_id: userId(u) })
    sessions.push({ id: sessionId(followers + 2 * u), user_id: userId(u) })
    sessions.push({ id: sessionId(followers + 2 * u + 1), user_id: userId(u) })
  }
  writeFileSync(file, JSON.stringify({ users, sessions, folders }))
  return folders.length
}

/** The users a PostgreSQL run creates (removed after it). */
export function fanoutUsers(followers: number): string[] {
  return [OWNER, ...Array.from({ length: followers / 2 }, (_, u) => userId(u))]
}

export interface WakeFigures {
  scenario: 'sse' | 'long-poll' | 'many users'
  followers: number
  commits: number
  /** deliveries expected (followers x commits, or per commit its user's followers) and made */
  expected: number
  received: number
  failed: number
  p50Ms: number
  p99Ms: number
  /** the service's CPU from each commit to its last receipt, summed */
  serviceCpuSeconds: number
  /** that CPU over the deliveries */
  serviceUsPerDelivery: number
  /** that CPU over the commits */
  serviceUsPerCommit: number
  serviceCores: number
  generatorCores: number
  /** the service's event loop delay during the wakes: the worst p99 and max of any one */
  loopLagP99Ms: number
  loopLagMaxMs: number
  /** the generator's own (this process's) event loop delay over the wakes, beyond its sampling */
  generatorLagP99Ms: number
  generatorLagMaxMs: number
  /** resident memory per open stream or held request above the service before them */
  rssPerFollowerKb: number
  /** 1-minute load average before and after */
  load: [number, number]
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Answer {
  status: number
  /** the answer's headers as [name, value] pairs, but those Node's server writes itself */
  headers: [string, string][]
  body: string
}

/** The headers node:http writes on every answer (the floor's own). */
const SERVER_HEADERS = new Set(['date', 'connection', 'keep-alive'])

function getText(port: number, path: string, cookie?: string, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = cookie === undefined ? {} : { cookie: `session_id=${cookie}` }
    const req = request({ host: HOST, port, path, headers, method, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const pairs: [string, string][] = []
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
          const name = (res.rawHeaders[i] ?? '').toLowerCase()
          if (!SERVER_HEADERS.has(name)) pairs.push([name, res.rawHeaders[i + 1] ?? ''])
        }
        resolve({ status: res.statusCode ?? 0, headers: pairs, body: Buffer.concat(chunks).toString() })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

async function post(port: number, path: string): Promise<void> {
  const answer = await getText(port, path, undefined, 'POST')
  if (answer.status >= 300) throw new Error(`POST ${path}: ${answer.status}`)
}

/** The service's answer to one commit (fanout-floor-server.ts sends the same). */
export type RecordedAnswer = Pick<Answer, 'headers' | 'body'>

/**
 * The server's event loop delay since the last scrape, in ms (a scrape resets prom-client's
 * histogram): beyond the monitor's sampling interval, which an idle loop reads.
 */
async function loopLag(port: number): Promise<{ p99: number; max: number }> {
  const { body } = await getText(port, '/metrics')
  const value = (name: string) =>
    Number(new RegExp(`^${name} ([0-9.e+-]+)`, 'm').exec(body)?.[1] ?? NaN) * 1000 - EVENT_LOOP_RESOLUTION_MS
  return { p99: value('nodejs_eventloop_lag_p99_seconds'), max: value('nodejs_eventloop_lag_max_seconds') }
}

/** Per store operation, its calls (`_count`) and cumulative counts by bucket (`le`) so far. */
type StoreCalls = Map<string, { count: number; buckets: Map<number, number> }>

/** The service's db_operation_duration_seconds (successful calls), from its metrics. */
async function storeCalls(port: number): Promise<StoreCalls> {
  const { body } = await getText(port, '/metrics')
  const calls: StoreCalls = new Map()
  const of = (operation: string) => {
    let entry = calls.get(operation)
    if (entry === undefined) {
      entry = { count: 0, buckets: new Map() }
      calls.set(operation, entry)
    }
    return entry
  }
  const line = /^db_operation_duration_seconds_(bucket|count)\{([^}]*)\} ([0-9.e+-]+)$/gm
  for (let match = line.exec(body); match !== null; match = line.exec(body)) {
    const [, kind, labels = '', value] = match
    if (!labels.includes('outcome="ok"')) continue
    const operation = /operation="([^"]+)"/.exec(labels)?.[1] ?? '?'
    const le = /le="([^"]+)"/.exec(labels)?.[1]
    if (kind === 'count') of(operation).count = Number(value)
    else if (le !== undefined && le !== '+Inf') of(operation).buckets.set(Number(le), Number(value))
  }
  return calls
}

/** Each operation called between two scrapes: its calls and the bucket its p99 falls in. */
function storeCallsBetween(before: StoreCalls, after: StoreCalls): string {
  const parts: string[] = []
  for (const [operation, now] of after) {
    const was = before.get(operation)
    const count = now.count - (was?.count ?? 0)
    if (count === 0) continue
    const les = [...now.buckets.keys()].sort((a, b) => a - b)
    const p99 = les.find((le) => (now.buckets.get(le) ?? 0) - (was?.buckets.get(le) ?? 0) >= 0.99 * count)
    parts.push(
      `${operation} ${count} (p99 ${p99 === undefined ? 'above the last bucket' : `<= ${p99 * 1000} ms`})`,
    )
  }
  return parts.join(', ')
}

/** The owner's tree downloaded to its end: the cursor at its present. */
async function presentCursor(port: number): Promise<string> {
  let cursor: string | null = null
  for (;;) {
    const query: string = cursor === null ? '?limit=1000' : `?limit=1000&cursor=${cursor}`
    const answer = await getText(port, `${FOLDER_TREE_PATH}${query}`, sessionId(0))
    if (answer.status !== 200) throw new Error(`tree: ${answer.status} ${answer.body}`)
    const body = JSON.parse(answer.body) as { cursor: string; has_more: boolean }
    cursor = body.cursor
    if (!body.has_more) return cursor
  }
}

interface Running {
  port: number
  service: Child
  profileDir: string | null
}

async function serve(
  url: string,
  root: string,
  followers: number,
  profileDir: string | null,
  workers: number,
): Promise<Running> {
  const port = await freePort()
  const env = {
    ...process.env,
    ...SERVICE_ENV,
    WORKERS: String(workers),
    LONG_POLL_MAX_WAITERS: String(followers + 100),
    LONG_POLL_PER_SESSION: '4',
    MAX_CONNECTIONS: String(2 * followers + 100),
  }
  if (profileDir !== null) mkdirSync(profileDir, { recursive: true })
  const nodeArgs = profileDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir]
  return { port, service: await startService({ root, url, port, env, nodeArgs }), profileDir }
}

/** Waits until `done()` or `ms` passed; true when done. */
async function until(done: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms
  while (!done()) {
    if (performance.now() > end) return false
    await sleep(5)
  }
  return true
}

/** The wakes of one scenario: each commit, then every follower that must hear of it, timed. */
class WakeMeter {
  delays: number[] = []
  serviceCpu = 0
  generatorCpu = 0
  elapsed = 0
  lagP99 = 0
  lagMax = 0
  /** this process's event loop delay, reset at each wake (a histogram enabled anew counts its idle gap) */
  private readonly generatorLag: IntervalHistogram = monitorEventLoopDelay({
    resolution: EVENT_LOOP_RESOLUTION_MS,
  })
  /** its worst p99 and max of any one wake, ms beyond its sampling */
  generatorLagP99 = 0
  generatorLagMax = 0
  /** monotonic µs of each wake's start and end, for the profile's window */
  windows: [number, number][] = []

  constructor(
    private readonly port: number,
    private readonly pid: number,
  ) {
    this.generatorLag.enable()
  }

  /** Stops the generator's delay monitor. */
  done(): void {
    this.generatorLag.disable()
  }

  /**
   * `commit()` makes the wake's commit(s) and resolves with the time (sharedNow) to time the
   * deliveries from; then waits until `heard()`, and SETTLE_MS more. Resolves with that time.
   */
  async wake(commit: () => Promise<number>, heard: () => boolean): Promise<number> {
    await loopLag(this.port)
    const generator = process.cpuUsage()
    const service = readTreeCpuSeconds(this.pid)
    const from = process.hrtime.bigint()
    const started = performance.now()
    this.generatorLag.reset()
    const committed = await commit()
    await until(heard, RECEIPT_TIMEOUT_MS)
    const lagMs = (ns: number) => ns / 1e6 - EVENT_LOOP_RESOLUTION_MS
    this.generatorLagP99 = Math.max(this.generatorLagP99, lagMs(this.generatorLag.percentile(99)))
    this.generatorLagMax = Math.max(this.generatorLagMax, lagMs(this.generatorLag.max))
    // What the deliveries leave to do (a held request asked again, a stream parked again) is
    // their cost too: the CPU is read once the service has had time to finish it.
    await sleep(SETTLE_MS)
    const elapsed = (performance.now() - started) / 1000
    this.windows.push([Number(from / 1000n), Number(process.hrtime.bigint() / 1000n)])
    const used = process.cpuUsage(generator)
    this.generatorCpu += (used.user + used.system) / 1e6
    this.serviceCpu += readTreeCpuSeconds(this.pid) - service
    this.elapsed += elapsed
    const lag = await loopLag(this.port)
    this.lagP99 = Math.max(this.lagP99, lag.p99)
    this.lagMax = Math.max(this.lagMax, lag.max)
    return committed
  }
}

function figures(
  scenario: WakeFigures['scenario'],
  meter: WakeMeter,
  set: RawFollowerSet,
  counts: { followers: number; commits: number; expected: number; rssPerFollowerKb: number; load: number },
): WakeFigures {
  meter.done()
  const received = meter.delays.length
  return {
    scenario,
    followers: counts.followers,
    commits: counts.commits,
    expected: counts.expected,
    received,
    failed: set.failed,
    p50Ms: quantile(meter.delays, 0.5),
    p99Ms: quantile(meter.delays, 0.99),
    serviceCpuSeconds: meter.serviceCpu,
    serviceUsPerDelivery: (meter.serviceCpu / Math.max(1, received)) * 1e6,
    serviceUsPerCommit: (meter.serviceCpu / Math.max(1, counts.commits)) * 1e6,
    serviceCores: meter.serviceCpu / meter.elapsed,
    generatorCores: meter.generatorCpu / meter.elapsed,
    loopLagP99Ms: meter.lagP99,
    loopLagMaxMs: meter.lagMax,
    generatorLagP99Ms: meter.generatorLagP99,
    generatorLagMaxMs: meter.generatorLagMax,
    rssPerFollowerKb: counts.rssPerFollowerKb,
    load: [counts.load, loadavg()[0] ?? NaN],
  }
}

/** A rename by this process's own connection, for what is not timed (named unlike the writer's renames). */
async function rename(sql: RawSql, id: string): Promise<void> {
  await sql.run('UPDATE folders SET name = ? WHERE id = ?', `renamed ${randomUUID()}`, id)
}

/** What a one-user scenario follows: the service, or the floor beside it (fanout-floor-server.ts). */
interface WakeTarget {
  port: number
  pid: number
  /** the followers' request path */
  path: string
  /**
   * the k-th commit (0 first) that every follower must hear of: when to time it from
   * (sharedNow) and the rename it makes (rename-writer.ts; null: the k-th event is its own)
   */
  commit(k: number): Promise<{ at: number; seq: number | null }>
  /** what the target printed, for a failure's message */
  output(): string
}

/** The service as a target: the owner's tree feed from its present, renames of its folders. */
async function serviceTarget(
  running: Running,
  writer: RenameWriter,
  kind: FollowerKind,
): Promise<WakeTarget> {
  const cursor = await presentCursor(running.port)
  return {
    port: running.port,
    pid: running.service.pid,
    path: `${FOLDER_TREE_PATH}?cursor=${cursor}${kind === 'long-poll' ? '&wait=30' : ''}`,
    commit: (k) => writer.rename(folderId(k % FOLDERS)),
    output: () => running.service.output(),
  }
}

/** Every follower of one owner over `kind`, `commits` commits a second apart. */
async function oneUser(
  target: WakeTarget,
  kind: FollowerKind,
  followers: number,
  commits: number,
): Promise<{ figures: WakeFigures; meter: WakeMeter }> {
  const { port, pid } = target
  const load = loadavg()[0] ?? NaN
  await sleep(1000)
  const idleRss = readTreeRss(pid)
  // Per follower, the time of each event (SSE's first is the answer on arrival) and the
  // highest rename it carried, and the highest rename it has heard of so far.
  const heardAt: number[][] = Array.from({ length: followers }, () => [])
  const heardSeq: number[][] = Array.from({ length: followers }, () => [])
  const highest = new Array<number>(followers).fill(-1)
  const set = await openRawFollowers({
    port,
    kind,
    requests: Array.from({ length: followers }, (_, i) => ({ path: target.path, sessionId: sessionId(i) })),
    onSeen: (i, _count, at, seq) => {
      heardAt[i]?.push(at)
      heardSeq[i]?.push(seq)
      if (seq > (highest[i] ?? -1)) highest[i] = seq
    },
  })
  const first = kind === 'sse' ? 1 : 0
  // Set up: every stream had its first event; held requests had time to park.
  if (kind === 'sse') await until(() => set.followers.every((f) => f.seen >= 1 || f.failed), 120_000)
  await sleep(kind === 'sse' ? 3000 : 8000)
  // A held request answered before any commit is one whose wait ended (it is asked again);
  // one that carried a rename would be a change nobody made.
  if (kind === 'long-poll' && highest.some((seq) => seq >= 0)) throw new Error('answered a change before any')
  const rssPerFollowerKb = (readTreeRss(pid) - idleRss) / 1024 / followers
  const meter = new WakeMeter(port, pid)
  const times = commits
  for (let k = 0; k < times; k++) {
    let seq: number | null = null
    const committed = await meter.wake(
      async () => {
        const made = await target.commit(k)
        seq = made.seq
        return made.at
      },
      () =>
        set.followers.every(
          (f, i) => f.failed || (seq === null ? f.seen >= first + k + 1 : (highest[i] ?? -1) >= seq),
        ),
    )
    for (let i = 0; i < followers; i++) {
      const times = heardAt[i] as number[]
      // The event that carried the rename (the first whose rename is this one or later), or the k-th event.
      const e = seq === null ? first + k : (heardSeq[i] as number[]).findIndex((s) => s >= (seq as number))
      const heard = e === -1 ? undefined : times[e]
      if (heard !== undefined) meter.delays.push(heard - committed)
    }
  }
  set.close()
  if (set.failed > 0)
    log(
      `  ${set.failed} ${kind} followers failed (first: ${set.firstFailure}); the server said:\n${target.output().slice(-2000)}`,
    )
  return {
    figures: figures(kind, meter, set, {
      followers,
      commits: times,
      expected: followers * times,
      rssPerFollowerKb,
      load,
    }),
    meter,
  }
}

/**
 * The service's answer to one commit, as a follower at the present gets it (its headers and
 * body): one rename, then the feed read from the cursor before it. The floor sends these bytes.
 */
async function recordAnswer(running: Running, sql: RawSql): Promise<RecordedAnswer> {
  const cursor = await presentCursor(running.port)
  await rename(sql, folderId(FOLDERS - 1))
  const answer = await getText(running.port, `${FOLDER_TREE_PATH}?cursor=${cursor}`, sessionId(0))
  if (answer.status !== 200) throw new Error(`tree: ${answer.status} ${answer.body}`)
  return { headers: answer.headers, body: answer.body }
}

/** The floor's run of a one-user scenario: a bare node:http server sending `answer` (fanout-floor-server.ts). */
async function floorOneUser(
  root: string,
  answer: RecordedAnswer,
  kind: FollowerKind,
  followers: number,
  commits: number,
  oneWrite = false,
): Promise<WakeFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'fanout-floor-'))
  const file = join(dir, 'answer.json')
  writeFileSync(file, JSON.stringify(answer))
  const port = await freePort()
  const floor = spawnChild(
    'fan-out floor',
    process.execPath,
    [
      '--import',
      'tsx',
      'bench/lib/fanout-floor-server.ts',
      String(port),
      file,
      ...(oneWrite ? ['one-write'] : []),
    ],
    process.env,
    root,
  )
  try {
    await waitForHttp(floor, `http://${HOST}:${port}/floor-ready`, 30_000)
    const target: WakeTarget = {
      port,
      pid: floor.pid,
      path: FOLDER_TREE_PATH,
      commit: async () => {
        const at = sharedNow()
        await post(port, '/fire')
        return { at, seq: null }
      },
      output: () => floor.output(),
    }
    return (await oneUser(target, kind, followers, commits)).figures
  } finally {
    await stopChild(floor)
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Two streams for each of followers / 2 users; renames of a random user's folder spread
 * evenly at `rate` a second by the writer process. A commit counts as delivered to a
 * follower with the first event that carries it or a later rename of the same user (the
 * feed sends a folder's state, so commits close together may arrive as one event).
 */
async function manyUsers(
  running: Running,
  writer: RenameWriter,
  followers: number,
  rate: number,
): Promise<{ figures: WakeFigures; meter: WakeMeter }> {
  const { port, service } = running
  const load = loadavg()[0] ?? NaN
  const users = followers / 2
  const idleRss = readTreeRss(service.pid)
  // Per follower, its events' times and renames (after the first: the download), and the
  // highest rename it has heard of.
  const eventAt: number[][] = Array.from({ length: followers }, () => [])
  const eventSeq: number[][] = Array.from({ length: followers }, () => [])
  const highest = new Array<number>(followers).fill(-1)
  const set = await openRawFollowers({
    port,
    kind: 'sse',
    // No cursor: the first event is the user's tree, then its changes.
    requests: Array.from({ length: followers }, (_, i) => ({
      path: FOLDER_TREE_PATH,
      sessionId: sessionId(followers + i),
    })),
    onSeen: (i, count, at, seq) => {
      if (count < 2 || seq < 0) return
      eventAt[i]?.push(at)
      eventSeq[i]?.push(seq)
      if (seq > (highest[i] ?? -1)) highest[i] = seq
    },
  })
  await until(() => set.followers.every((f) => f.seen >= 1 || f.failed), 120_000)
  await sleep(3000)
  const rssPerFollowerKb = (readTreeRss(service.pid) - idleRss) / 1024 / followers
  const meter = new WakeMeter(port, service.pid)
  const commits: Commit[] = []
  /** per user, its last rename */
  const lastOf = new Map<number, number>()
  const folders = Array.from({ length: users }, (_, u) =>
    Array.from({ length: USER_FOLDERS }, (_, f) => userFolderId(u * USER_FOLDERS + f)),
  )
  const callsBefore = await storeCalls(port)
  await meter.wake(
    async () => {
      const at = sharedNow()
      await writer.spread(folders, rate, MANY_SECONDS, (commit) => {
        commits.push(commit)
        lastOf.set(commit.user, commit.seq)
      })
      return at
    },
    () => {
      for (const [u, seq] of lastOf) {
        for (const i of [2 * u, 2 * u + 1])
          if (!(set.followers[i]?.failed ?? true) && (highest[i] ?? -1) < seq) return false
      }
      return true
    },
  )
  // Each commit's delivery to each of its user's followers: the first event carrying it or later.
  for (const commit of commits) {
    for (const i of [2 * commit.user, 2 * commit.user + 1]) {
      const e = (eventSeq[i] ?? []).findIndex((seq) => seq >= commit.seq)
      if (e !== -1) meter.delays.push((eventAt[i]?.[e] ?? NaN) - commit.at)
    }
  }
  // Where a delivery waits besides the event loop: the database's statements, by operation.
  log(`  store calls during the renames: ${storeCallsBetween(callsBefore, await storeCalls(port))}`)
  set.close()
  if (set.failed > 0) log(`  ${set.failed} many-user followers failed (first: ${set.firstFailure})`)
  const counts = { followers, commits: commits.length, expected: 2 * commits.length, rssPerFollowerKb, load }
  return { figures: figures('many users', meter, set, counts), meter }
}

interface StalledFigures {
  renames: number
  /** from the first rename to the last, s */
  seconds: number
  /** the reading follower: events it got, and from each rename to the first event after it */
  events: number
  p50Ms: number
  p99Ms: number
  /** the service's resident memory after the renames, above before them */
  rssGrowthMb: number
  load: [number, number]
}

/**
 * Two streams of the owner, one that never reads (its socket paused once its request is
 * sent) and one that does, and `renames` renames one after another: the service's memory
 * must stay bounded (a stream that cannot write holds its next read, not its frames) and
 * the reading one must keep up (from each rename to the first event after it).
 */
async function neverReading(running: Running, sql: RawSql, renames: number): Promise<StalledFigures> {
  const { port, service } = running
  const load = loadavg()[0] ?? NaN
  const path = `${FOLDER_TREE_PATH}?cursor=${await presentCursor(port)}`
  const seenAt: number[] = []
  const set = await openRawFollowers({
    port,
    kind: 'sse',
    requests: [0, 1].map((i) => ({ path, sessionId: sessionId(i) })),
    onSeen: (i, _count, at) => {
      if (i === 1) seenAt.push(at)
    },
  })
  await until(() => set.followers.every((f) => f.seen >= 1 || f.failed), 10_000)
  if (process.env.BENCH_STALL !== 'off') set.followers[0]?.socket.pause()
  await sleep(1000)
  const before = readTreeRss(service.pid)
  const committed: number[] = []
  for (let k = 0; k < renames; k++) {
    committed.push(sharedNow())
    await rename(sql, folderId(k % FOLDERS))
  }
  const last = committed.at(-1) ?? 0
  await until(() => (seenAt.at(-1) ?? 0) > last, RECEIPT_TIMEOUT_MS)
  await sleep(1000)
  const rssGrowthMb = (readTreeRss(service.pid) - before) / 1024 / 1024
  const delays: number[] = []
  let e = 0
  for (const at of committed) {
    while (e < seenAt.length && (seenAt[e] ?? 0) <= at) e++
    if (e < seenAt.length) delays.push((seenAt[e] ?? at) - at)
  }
  set.close()
  if (delays.length < committed.length)
    log(`  ${committed.length - delays.length} renames never reached the reader`)
  return {
    renames,
    seconds: (last - (committed[0] ?? last)) / 1000,
    events: seenAt.length,
    p50Ms: quantile(delays, 0.5),
    p99Ms: quantile(delays, 0.99),
    rssGrowthMb,
    load: [load, loadavg()[0] ?? NaN],
  }
}

/**
 * The stage of a wake a profiled function belongs to, by its module: the reads (the feed and
 * the store's statements, session checks included: one adapter call serves both), cursors,
 * serialisation, socket writes, the wake's own bookkeeping (watcher, streams, promises), GC.
 */
function wakeStage(url: string, name: string): string {
  if (name === '(garbage collector)') return 'garbage collection'
  if (
    /^(writev|write|writeBuffer)$/.test(name) ||
    /_http_outgoing|streams\/writable|node:net|stream_base/.test(url)
  )
    return 'socket writes'
  if (/\/store\/|better-sqlite3|node_modules\/pg|session-lookups|session-recheck|\/auth\.js/.test(url))
    return 'store: reads and session checks'
  if (/\/tokens\/|crypto/.test(url)) return 'cursors (seal, open)'
  if (/node_modules\/(fastify|pino|sonic-boom|@fastify)|_http_server|\/http\/plugins\//.test(url))
    return 'HTTP reply: Fastify, hooks, log line'
  if (/folder-json|folder-tree-json|serialized/.test(url) || name === 'eventFrame') return 'serialisation'
  if (/tree-feed|changes-feed|shared-reads|\/feed\/feed\.js/.test(url)) return 'feed: answer from rows'
  if (
    /watcher|feed-stream|feed-answer|event-stream|held-request|heartbeats/.test(url) ||
    /^(runMicrotasks|processTicksAndRejections)$/.test(name)
  )
    return 'wake: watcher, streams, promises'
  return 'other'
}

export interface FanoutSettings {
  root: string
  url: string
  followers: number
  commits: number
  rate: number
  /** renames while one stream never reads (0: not run) */
  stalled: number
  /** the service's WORKERS */
  workers: number
  /** the one-user scenarios (SSE, long-poll) */
  withOneUser: boolean
  /**
   * each one-user scenario again on the floor (fanout-floor-server.ts): 0 not, 1 as the
   * service writes, 2 also long-polls answered by one socket write each
   */
  floor: number
  /** where to write the service's CPU profiles of the one-user scenarios, one folder each (null: none) */
  profileDir: string | null
}

export async function runFanout(settings: FanoutSettings): Promise<WakeFigures[]> {
  const { root, url, followers, commits, rate, stalled, workers, withOneUser, floor, profileDir } = settings
  if (workers > 1) log(`  ${workers} workers (the loop delay is one worker's, the one a scrape reaches)`)
  const sql = await openRawSql(url)
  const writer = startRenameWriter(root, url)
  const results: WakeFigures[] = []
  /** the service's profile of a scenario, summarised over its wakes (--profile) */
  const profiled = async (running: Running, meter: WakeMeter) => {
    if (running.profileDir === null) return
    await stopChild(running.service)
    const summary = summariseProfiles(running.profileDir, 25, meter.windows, wakeStage)
    if (summary !== null) log(formatProfile(summary))
  }
  try {
    for (const kind of ['sse', 'long-poll'] as const) {
      if (!withOneUser) break
      const running = await serve(
        url,
        root,
        followers,
        profileDir === null ? null : `${profileDir}/${kind}`,
        workers,
      )
      let answer: RecordedAnswer
      try {
        answer = await recordAnswer(running, sql)
        const target = await serviceTarget(running, writer, kind)
        const { figures: wake, meter } = await oneUser(target, kind, followers, commits)
        results.push(wake)
        report(wake)
        await profiled(running, meter)
      } finally {
        await stopChild(running.service)
      }
      if (floor > 0) {
        const service = results.at(-1)
        const floors: [string, boolean][] = [['floor (bare node:http, the same bytes)', false]]
        if (floor > 1 && kind === 'long-poll') floors.push(['floor, each answer one socket write', true])
        for (const [name, oneWrite] of floors) {
          const figures = await floorOneUser(root, answer, kind, followers, commits, oneWrite)
          report(figures, name)
          log(
            `    service / floor: ${ratio(service?.serviceUsPerDelivery, figures.serviceUsPerDelivery)} the CPU a delivery, ${ratio(service?.p99Ms, figures.p99Ms)} the p99`,
          )
        }
      }
    }
    if (stalled > 0) {
      const running = await serve(url, root, Math.max(followers, 2), null, workers)
      try {
        const figures = await neverReading(running, sql, stalled)
        log(
          `  tree sse, one stream that never reads, ${figures.renames} renames in ${figures.seconds.toFixed(1)} s: the reading one got ${figures.events} events, rename to event p50 ${figures.p50Ms.toFixed(0)} ms, p99 ${figures.p99Ms.toFixed(0)} ms; service memory ${figures.rssGrowthMb >= 0 ? '+' : ''}${figures.rssGrowthMb.toFixed(1)} MB; load ${figures.load[0].toFixed(1)} -> ${figures.load[1].toFixed(1)}`,
        )
      } finally {
        await stopChild(running.service)
      }
    }
    if (rate > 0) {
      const running = await serve(
        url,
        root,
        followers,
        profileDir === null ? null : `${profileDir}/many`,
        workers,
      )
      try {
        const { figures: wake, meter } = await manyUsers(running, writer, followers, rate)
        results.push(wake)
        report(wake)
        await profiled(running, meter)
      } finally {
        await stopChild(running.service)
      }
    }
  } finally {
    writer.close()
    await sql.close()
  }
  return results
}

const ratio = (a: number | undefined, b: number) => (a === undefined ? '?' : `${(a / b).toFixed(2)}x`)

function report(w: WakeFigures, server = 'tree'): void {
  log(
    `  ${server} ${w.scenario}, ${w.followers} followers, ${w.commits} commits: ${w.received} of ${w.expected} deliveries, ${w.failed} failed; load ${w.load[0].toFixed(1)} -> ${w.load[1].toFixed(1)}`,
  )
  log(
    `    commit to delivery p50 ${w.p50Ms.toFixed(0)} ms, p99 ${w.p99Ms.toFixed(0)} ms; server ${w.serviceCpuSeconds.toFixed(2)} CPU s, ${w.serviceUsPerDelivery.toFixed(1)} us a delivery (${w.serviceUsPerCommit.toFixed(0)} us a commit), ${w.serviceCores.toFixed(2)} cores`,
  )
  log(
    `    event loop delay (beyond its ${EVENT_LOOP_RESOLUTION_MS} ms sampling): server p99 ${w.loopLagP99Ms.toFixed(1)} ms, max ${w.loopLagMaxMs.toFixed(1)} ms; generator ${w.generatorCores.toFixed(2)} cores, p99 ${w.generatorLagP99Ms.toFixed(1)} ms, max ${w.generatorLagMaxMs.toFixed(1)} ms; memory ${w.rssPerFollowerKb.toFixed(1)} KB a follower`,
  )
}
