import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { createServer } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import pg from 'pg'

/**
 * A cross-check of `npm run bench:feed`'s fan-out figures by a load generator that shares
 * none of its code: its own data, its own writer process, its own followers and its own
 * way of timing. It runs the built service (dist/) as a user would and follows the tree feed
 * from outside:
 *
 * - the writer is another process renaming folders by plain SQL, each rename its own
 *   commit, the new name `x<seq>`; it reports when each commit returned;
 * - each follower is a raw socket with its own session; it finds the `x<seq>` names in what
 *   it receives, so a delivery is timed from the commit that wrote the name to the bytes
 *   that carry it (a user's earlier commits still unheard count as received then: the
 *   feed sends a folder's state, not each change);
 * - a long-poll is re-held on its keep-alive connection with the cursor of each answer;
 * - its own CPU and event loop delay are printed beside the service's.
 *
 * Scenarios: `many` (two SSE followers each of `--users` users, renames of a random user's
 * folder at `--rate` a second for `--seconds`), `sse` and `long-poll` (`--followers`
 * followers of one user, `--commits` renames one second apart).
 *
 *   node --import tsx bench/fanout-crosscheck.ts --scenario many [--db URL] [--users 5000]
 *     [--folders 10] [--rate 500] [--seconds 10] [--history 0]
 *   node --import tsx bench/fanout-crosscheck.ts --scenario sse|long-poll --followers 10000 --commits 8
 *
 * `--folders`: folders per user; `--history N`: N renames committed before the followers
 * connect (a longer change log).
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const CLI = join(root, 'dist', 'cli', 'main.js')
const HOST = '127.0.0.1'
const log = (line: string) => process.stdout.write(`${line}\n`)
const now = () => performance.timeOrigin + performance.now()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const hex = (prefix: string, n: number) => `${prefix}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
const userId = (u: number) => hex('cc000001', u)
const sessionOf = (u: number, k: number) => hex('cc000002', 2 * u + k)
const folderOf = (u: number, f: number) => hex('cc000003', u * 1000 + f)

// ---- the writer process: `fanout-crosscheck.ts writer PLAN_JSON` ----

interface WriterPlan {
  db: string
  rate: number
  seconds: number
  /** the folders to rename, by user: the writer draws a user, then one of its folders */
  folders: string[][]
  /** the rename's first sequence number */
  firstSeq: number
  /** 0: random users; else this user only */
  oneUser: boolean
  /** renames one second apart (oneUser); 0: paced by rate */
  commits: number
}

async function writer(plan: WriterPlan): Promise<void> {
  let run: (name: string, id: string) => Promise<void>
  let close: () => Promise<void>
  if (/^postgres/.test(plan.db)) {
    const client = new pg.Client({ connectionString: plan.db })
    await client.connect()
    run = async (name, id) =>
      void (await client.query('UPDATE folders SET name = $1 WHERE id = $2', [name, id]))
    close = () => client.end()
  } else {
    const db = new Database(plan.db.replace(/^sqlite:/, ''), { timeout: 5000 })
    const rename = db.prepare('UPDATE folders SET name = ? WHERE id = ?')
    run = (name, id) => Promise.resolve(void rename.run(name, id))
    close = () => Promise.resolve(void db.close())
  }
  let seq = plan.firstSeq
  const out: string[] = []
  const flush = () => {
    if (out.length > 0) process.stdout.write(out.splice(0).join(''))
  }
  const commit = async (user: number) => {
    const ids = plan.folders[user] as string[]
    const s = seq++
    await run(`x${s}`, ids[Math.floor(Math.random() * ids.length)] as string)
    out.push(`C ${s} ${user} ${now().toFixed(3)}\n`)
  }
  if (plan.commits > 0) {
    for (let k = 0; k < plan.commits; k++) {
      await commit(0)
      flush()
      await sleep(1000)
    }
  } else {
    const start = performance.now()
    let done = 0
    while (performance.now() - start < plan.seconds * 1000) {
      const due = Math.floor(((performance.now() - start) / 1000) * plan.rate)
      for (; done < due; done++) await commit(Math.floor(Math.random() * plan.folders.length))
      flush()
      await sleep(1)
    }
  }
  flush()
  process.stdout.write('END\n')
  await close()
}

// ---- the generator ----

interface Options {
  scenario: 'many' | 'sse' | 'long-poll'
  db: string | null
  users: number
  folders: number
  rate: number
  seconds: number
  history: number
  followers: number
  commits: number
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.listen(0, HOST, () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address !== null
          ? resolve(address.port)
          : reject(new Error('no port')),
      )
    })
  })
}

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'ignore', 'inherit'] })
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${args[0]}: exit ${code}`))))
  })
}

async function startService(
  url: string,
  followers: number,
  profileDir: string | null,
): Promise<{ port: number; child: ChildProcess }> {
  const port = await freePort()
  const env = {
    ...process.env,
    RATE_LIMIT_PER_MINUTE: '0',
    AUTH_FAILURES_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
    LONG_POLL_MAX_WAITERS: String(followers + 100),
    LONG_POLL_PER_SESSION: '4',
    MAX_CONNECTIONS: String(2 * followers + 100),
  }
  const profile = profileDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir]
  const child = spawn(
    process.execPath,
    [...profile, CLI, 'serve', '--db', url, '--host', HOST, '--port', String(port)],
    {
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  )
  for (let i = 0; i < 300; i++) {
    const ok = await fetch(`http://${HOST}:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    )
    if (ok) return { port, child }
    await sleep(100)
  }
  throw new Error('the service did not start')
}

let firstFailure = ''

/** A follower: one socket, one session; calls `heard(seqs, at)` with the `x<seq>` names in what it receives. */
class Follower {
  private text = ''
  failed = false
  answers = 0
  closing = false
  /** bytes came */
  started = false
  private cursor: string | null

  constructor(
    private readonly port: number,
    private readonly session: string,
    private readonly kind: 'sse' | 'long-poll',
    cursor: string | null,
    private readonly heard: (seqs: number[], at: number) => void,
  ) {
    this.cursor = cursor
    this.socket = connect({ host: HOST, port })
  }

  private readonly socket: Socket

  open(): void {
    this.socket.setNoDelay(true)
    this.socket.setEncoding('latin1')
    this.socket.on('data', (data: string) => this.data(data))
    this.socket.on('error', (error) => this.fail(String(error)))
    this.socket.on('close', () => this.closing || this.fail(`closed; last bytes: ${this.text.slice(-300)}`))
    this.ask()
  }

  close(): void {
    this.closing = true
    this.socket.destroy()
  }

  private fail(why: string): void {
    if (this.failed) return
    this.failed = true
    firstFailure ||= `${why} (${((now() - performance.timeOrigin) / 1000).toFixed(1)} s into the run, after ${this.answers} answers)`
  }

  private ask(): void {
    const query =
      this.cursor === null ? '' : `?cursor=${this.cursor}${this.kind === 'long-poll' ? '&wait=30' : ''}`
    const accept = this.kind === 'sse' ? 'accept: text/event-stream\r\n' : ''
    this.socket.write(
      `GET /v1/folders/tree${query} HTTP/1.1\r\nhost: ${HOST}\r\ncookie: session_id=${this.session}\r\n${accept}\r\n`,
    )
  }

  private data(data: string): void {
    const at = now()
    this.started = true
    this.text += data
    if (this.kind === 'sse') {
      // Whole events only (a name split between two reads is found in the next).
      const end = this.text.lastIndexOf('\n\n')
      if (end === -1) return
      const events = this.text.slice(0, end)
      this.text = this.text.slice(end + 2)
      this.report(events, at)
      return
    }
    // Long-poll: whole answers by Content-Length, then the next request with its cursor.
    for (;;) {
      const head = this.text.indexOf('\r\n\r\n')
      if (head === -1) return
      const length = Number(/content-length: *(\d+)/i.exec(this.text.slice(0, head))?.[1] ?? NaN)
      if (!Number.isFinite(length) || this.text.length < head + 4 + length) return
      const status = Number(this.text.slice(9, 12))
      const body = this.text.slice(head + 4, head + 4 + length)
      this.text = this.text.slice(head + 4 + length)
      this.answers++
      if (status !== 200) return this.fail(`status ${status}: ${body.slice(0, 300)}`)
      this.report(body, at)
      this.cursor = (JSON.parse(body) as { cursor: string }).cursor
      this.ask()
    }
  }

  private report(text: string, at: number): void {
    const seqs: number[] = []
    for (const match of text.matchAll(/"name":"x(\d+)"/g)) seqs.push(Number(match[1]))
    if (seqs.length > 0) this.heard(seqs, at)
  }
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN

async function presentCursor(port: number, session: string): Promise<string> {
  let cursor = ''
  for (;;) {
    const answer = await fetch(
      `http://${HOST}:${port}/v1/folders/tree?limit=1000${cursor && `&cursor=${cursor}`}`,
      {
        headers: { cookie: `session_id=${session}` },
      },
    )
    const body = (await answer.json()) as { cursor: string; has_more: boolean }
    cursor = body.cursor
    if (!body.has_more) return cursor
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', default: 'many' },
      db: { type: 'string' },
      users: { type: 'string', default: '5000' },
      folders: { type: 'string', default: '10' },
      rate: { type: 'string', default: '500' },
      seconds: { type: 'string', default: '10' },
      history: { type: 'string', default: '0' },
      followers: { type: 'string', default: '10000' },
      commits: { type: 'string', default: '8' },
      profile: { type: 'string' },
    },
  })
  const o: Options = {
    scenario: values.scenario as Options['scenario'],
    db: values.db ?? null,
    users: Number(values.users),
    folders: Number(values.folders),
    rate: Number(values.rate),
    seconds: Number(values.seconds),
    history: Number(values.history),
    followers: Number(values.followers),
    commits: Number(values.commits),
  }
  const many = o.scenario === 'many'
  const users = many ? o.users : 1
  const followers = many ? 2 * users : o.followers
  const sessionsPerUser = many ? 2 : followers
  const tmp = mkdtempSync(join(tmpdir(), 'fanout-crosscheck-'))
  let service: ChildProcess | null = null
  let pgPool: pg.Client | null = null
  try {
    // Data: users, their sessions, `folders` root folders each.
    const data = {
      users: Array.from({ length: users }, (_, u) => ({ id: userId(u), username: `cc${u}` })),
      sessions: Array.from({ length: users * sessionsPerUser }, (_, i) => ({
        id: many ? sessionOf(Math.floor(i / 2), i % 2) : hex('cc000002', i),
        user_id: userId(many ? Math.floor(i / 2) : 0),
      })),
      folders: Array.from({ length: users * o.folders }, (_, i) => ({
        id: folderOf(Math.floor(i / o.folders), i % o.folders),
        name: `f${i % o.folders}`,
        owner_id: userId(Math.floor(i / o.folders)),
      })),
    }
    const file = join(tmp, 'data.json')
    writeFileSync(file, JSON.stringify(data))
    let url = `sqlite:${join(tmp, 'cc.db')}`
    if (o.db !== null) {
      // A database of its own on the given server.
      const name = `crosscheck_${process.pid}`
      pgPool = new pg.Client({ connectionString: o.db })
      await pgPool.connect()
      await pgPool.query(`CREATE DATABASE ${name}`)
      const u = new URL(o.db)
      u.pathname = `/${name}`
      url = u.toString()
    }
    const env = { ...process.env, LOG_LEVEL: 'warn' }
    await runCli(['migrate', '--db', url], env)
    await runCli(['import', file, '--db', url], env)
    const folders = Array.from({ length: users }, (_, u) =>
      Array.from({ length: o.folders }, (_, f) => folderOf(u, f)),
    )
    let seq = 0
    const runWriter = (
      plan: Omit<WriterPlan, 'db' | 'folders' | 'firstSeq'>,
      onCommit: (s: number, user: number, at: number) => void,
    ) =>
      new Promise<void>((resolve, reject) => {
        const planFile = join(tmp, `plan-${seq}.json`)
        writeFileSync(planFile, JSON.stringify({ ...plan, db: url, folders, firstSeq: seq }))
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', fileURLToPath(import.meta.url), 'writer', planFile],
          {
            cwd: root,
            stdio: ['ignore', 'pipe', 'inherit'],
          },
        )
        let rest = ''
        child.stdout.setEncoding('utf8')
        child.stdout.on('data', (text: string) => {
          const lines = (rest + text).split('\n')
          rest = lines.pop() ?? ''
          for (const line of lines) {
            const [kind, s, u, at] = line.split(' ')
            if (kind !== 'C') continue
            seq = Math.max(seq, Number(s) + 1)
            onCommit(Number(s), Number(u), Number(at))
          }
        })
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer: exit ${code}`))))
      })
    if (o.history > 0) {
      await runWriter({ rate: 5000, seconds: o.history / 5000, oneUser: false, commits: 0 }, () => undefined)
      log(`history: ${seq} renames before the followers`)
    }
    const started = await startService(url, followers, values.profile ?? null)
    service = started.child
    const { port } = started
    const pid = service.pid as number

    // Per user: its commits' seqs in order, with their times; per follower: what it received
    // (the highest name and the time), matched after the run, since a follower may read a
    // name before the writer's report of its commit reaches this process.
    const committed = new Map<number, number>()
    const byUser: number[][] = Array.from({ length: users }, () => [])
    const received: [number, number][][] = Array.from({ length: followers }, () => [])
    const top = new Array<number>(followers).fill(-1)
    const onHeard = (i: number) => (seqs: number[], at: number) => {
      const highest = Math.max(...seqs)
      received[i]?.push([highest, at])
      top[i] = Math.max(top[i] as number, highest)
    }
    const userOf = (i: number) => (many ? Math.floor(i / 2) : 0)
    /** each commit to each of its user's followers: from its commit to the first bytes carrying it or a later one */
    const delaysOf = () => {
      const delays: number[] = []
      for (let i = 0; i < followers; i++) {
        const mine = byUser[userOf(i)] as number[]
        const got = received[i] as [number, number][]
        let r = 0
        for (const seq of mine) {
          while (r < got.length && (got[r] as [number, number])[0] < seq) r++
          if (r === got.length) break
          delays.push((got[r] as [number, number])[1] - (committed.get(seq) as number))
        }
      }
      return delays
    }
    const allHeard = () => {
      for (let i = 0; i < followers; i++) {
        const last = (byUser[userOf(i)] as number[]).at(-1)
        if (last !== undefined && (top[i] as number) < last && !(set[i]?.failed ?? true)) return false
      }
      return true
    }
    const cursor = many ? null : await presentCursor(port, hex('cc000002', 0))
    const set: Follower[] = []
    for (let i = 0; i < followers; i++) {
      const user = many ? Math.floor(i / 2) : 0
      const session = many ? sessionOf(user, i % 2) : hex('cc000002', i)
      const follower = new Follower(
        port,
        session,
        o.scenario === 'long-poll' ? 'long-poll' : 'sse',
        cursor,
        onHeard(i),
      )
      follower.open()
      set.push(follower)
      // Paced: a stream's first bytes say the service took it in (bounded at 10 s a batch),
      // so that the accept queue never overflows; held requests show nothing, so 50 ms a batch.
      if (i % 200 === 199) {
        for (let waited = 0; waited < 200; waited++) {
          await sleep(50)
          if (o.scenario === 'long-poll' || set.every((f) => f.started || f.failed)) break
        }
      }
    }
    await sleep(5000)
    const failedBefore = set.filter((f) => f.failed).length
    const load = loadavg()[0] ?? NaN
    const lag = monitorEventLoopDelay({ resolution: 10 })
    lag.enable()
    const ownCpu = process.cpuUsage()
    const serviceCpu = cpuSeconds(pid)
    const t0 = performance.now()
    const window0 = process.hrtime.bigint() / 1000n
    let commits = 0
    await runWriter(
      many
        ? { rate: o.rate, seconds: o.seconds, oneUser: false, commits: 0 }
        : { rate: 0, seconds: 0, oneUser: true, commits: o.commits },
      (s, user, at) => {
        committed.set(s, at)
        byUser[user]?.push(s)
        commits++
      },
    )
    const expected = commits * (many ? 2 : followers)
    const deadline = performance.now() + 30_000
    while (!allHeard() && performance.now() < deadline) await sleep(20)
    const delays = delaysOf()
    const elapsed = (performance.now() - t0) / 1000
    // The span of the renames and their deliveries on the monotonic clock a CPU profile uses.
    if (values.profile !== undefined) log(`  profile window ${window0} ${process.hrtime.bigint() / 1000n}`)
    const own = process.cpuUsage(ownCpu)
    const serviceUsed = cpuSeconds(pid) - serviceCpu
    lag.disable()
    const sorted = [...delays].sort((a, b) => a - b)
    const failed = set.filter((f) => f.failed).length
    log(
      `crosscheck ${o.scenario}: ${followers} followers${many ? ` of ${users} users (${o.folders} folders each), ${commits} renames at ${o.rate}/s` : `, ${commits} commits`}; history ${o.history}`,
    )
    log(
      `  ${delays.length} of ${expected} deliveries (${failedBefore} failed before, ${failed} after); commit to bytes p50 ${quantile(sorted, 0.5).toFixed(0)} ms, p99 ${quantile(sorted, 0.99).toFixed(0)} ms, max ${(sorted.at(-1) ?? NaN).toFixed(0)} ms`,
    )
    log(
      `  service ${serviceUsed.toFixed(2)} CPU s (${(serviceUsed / elapsed).toFixed(2)} cores, ${((serviceUsed / Math.max(1, commits)) * 1e6).toFixed(0)} us a commit); generator ${((own.user + own.system) / 1e6 / elapsed).toFixed(2)} cores, its loop delay p99 ${(lag.percentile(99) / 1e6 - 10).toFixed(1)} ms, max ${(lag.max / 1e6 - 10).toFixed(1)} ms (beyond 10 ms); load ${load.toFixed(1)} -> ${(loadavg()[0] ?? NaN).toFixed(1)}`,
    )
    if (failed > 0) log(`  first failure: ${firstFailure}`)
    for (const f of set) f.close()
  } finally {
    if (service !== null && service.exitCode === null) {
      const exited = new Promise((resolve) => service?.once('exit', resolve))
      service.kill('SIGTERM')
      await Promise.race([exited, sleep(15_000)])
    }
    if (pgPool !== null) {
      await pgPool.query(`DROP DATABASE IF EXISTS crosscheck_${process.pid} WITH (FORCE)`)
      await pgPool.end()
    }
    rmSync(tmp, { recursive: true, force: true })
  }
}

if (process.argv[2] === 'writer')
  await writer(JSON.parse(readFileSync(process.argv[3] as string, 'utf8')) as WriterPlan)
else await main()
