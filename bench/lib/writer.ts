import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import pg from 'pg'
import { generator } from './dataset.js'

/**
 * The other writer: a separate process that writes straight into the service's database
 * (better-sqlite3 or pg; nothing of the service or its Store), as the other services of a
 * drive do, at a steady rate. Each write is its own transaction: insert a folder, rename
 * one, or delete one (hard delete of a folder it inserted, soft delete of an original),
 * always among the children of one user's listed folder, the user drawn at random from
 * the working set, so a write spoils that user's cached listings and no one else's.
 *
 * After each commit it asks the service for the listing the write changed and checks that
 * the write shows (an answer that does not is "stale"): the folder it inserted or renamed
 * is on page 1 under its new name, the folder it deleted is not, and `total` is what the
 * writes so far make it. Its own folders are named "0000 w<n>", which sorts before every
 * other name, and at most 10 such folders are kept per user, so page 1 always holds them.
 * A user with a write or check in flight is not written again until the check is done; at
 * most MAX_IN_FLIGHT writes with their checks are under way at once.
 *
 *   node --import tsx bench/lib/writer.ts PLAN_JSON
 *
 * Runs until SIGTERM (or the plan's `seconds`), then prints one line `WRITER_JSON {...}`.
 */

export interface WriterPlan {
  /** the service's database: sqlite:PATH or postgres://... */
  db: string
  /** the service, on 127.0.0.1 */
  port: number
  /** writes per second */
  rate: number
  /** page size of the check requests (the read load's, so they share its cache entries) */
  limit: number
  /** stop by itself after this many seconds (a bound; the bench stops it with SIGTERM) */
  seconds: number
  seed: number
  users: WriterUser[]
}

export interface WriterUser {
  ownerId: string
  sessionId: string
  /** the folder whose children are written */
  folderId: string
  /** its live children at start */
  childIds: string[]
}

export interface WriterReport {
  seconds: number
  writes: number
  writesPerSecond: number
  byKind: { insert: number; rename: number; delete: number }
  writeErrors: number
  /** commit time of one write, ms */
  commitMs: { p50: number; p99: number; max: number }
  /** how far behind its schedule the writer fell at worst, ms */
  maxLagMs: number
  /** when the last write committed (epoch ms, comparable across the bench's processes); 0: none */
  lastCommitAt: number
  checks: number
  stale: number
  /** check requests that failed outright (status other than 200, socket error) */
  checkFailures: number
  /** commit-to-answer time of the check requests, ms */
  checkMs: { p50: number; p99: number; max: number }
  examples: string[]
}

const FRONT_MAX = 10
/** writes (each with its check) under way at once, at most */
const MAX_IN_FLIGHT = 32
/** PostgreSQL connections of the writer */
const CONNECTIONS = 4
const MAX_EXAMPLES = 5

interface Writable {
  run(sql: string, params: unknown[]): Promise<void>
  close(): Promise<void>
}

/** The statements, with `?` placeholders; `time` is the placeholder of an epoch-ms value. */
function statements(time: string, yes: string) {
  return {
    insert: `INSERT INTO folders (id, name, folder_id, owner_id, created_at, updated_at) VALUES (?, ?, ?, ?, ${time}, ${time})`,
    rename: `UPDATE folders SET name = ?, updated_at = ${time} WHERE id = ? AND owner_id = ?`,
    hardDelete: 'DELETE FROM folders WHERE id = ? AND owner_id = ?',
    softDelete: `UPDATE folders SET is_deleted = ${yes}, updated_at = ${time} WHERE id = ? AND owner_id = ?`,
  }
}

/** A plain connection to the service's database (a pool of CONNECTIONS on PostgreSQL). */
export function openDatabase(url: string): { db: Writable; sql: ReturnType<typeof statements> } {
  if (/^postgres(ql)?:\/\//i.test(url)) {
    // A few connections, so that one slow commit does not hold up the writes due after it.
    const pool = new pg.Pool({ connectionString: url, max: CONNECTIONS })
    return {
      db: {
        run: async (text, params) => {
          let n = 0
          await pool.query(
            text.replace(/\?/g, () => `$${++n}`),
            params,
          )
        },
        close: () => pool.end(),
      },
      sql: statements('to_timestamp(?::float8 / 1000)', 'true'),
    }
  }
  // The settings the service itself uses (WAL is a property of the file, set by the service).
  const db = new Database(url.replace(/^sqlite:(\/\/)?/i, ''), { timeout: 5_000 })
  db.pragma('synchronous = NORMAL')
  db.pragma('foreign_keys = ON')
  const prepared = new Map<string, Database.Statement>()
  return {
    db: {
      run: (text, params) => {
        let statement = prepared.get(text)
        if (statement === undefined) {
          statement = db.prepare(text)
          prepared.set(text, statement)
        }
        statement.run(...params)
        return Promise.resolve()
      },
      close: () => Promise.resolve(void db.close()),
    },
    sql: statements('?', '1'),
  }
}

function percentiles(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? 0 }
}

interface FrontFolder {
  id: string
  name: string
  /** inserted by the writer (hard delete) rather than an original renamed (soft delete) */
  inserted: boolean
}

interface UserState {
  user: WriterUser
  /** originals not yet renamed or deleted, in random order */
  untouched: string[]
  /** the writer's folders on page 1 */
  front: FrontFolder[]
  total: number
  /** a write or its check is under way */
  checking: boolean
  /** a write failed: what the database holds is no longer known, so no more writes here */
  lost: boolean
}

type Write = { kind: 'insert' | 'rename'; folder: FrontFolder } | { kind: 'delete'; folder: FrontFolder }

interface ListBody {
  total?: number
  folders?: { id?: string; name?: string }[]
}

export async function runWriter(plan: WriterPlan, stopped: () => boolean): Promise<WriterReport> {
  const random = generator(plan.seed)
  const { db, sql } = openDatabase(plan.db)
  const agent = new Agent({ keepAlive: true, maxSockets: 16 })
  const states: UserState[] = plan.users.map((user) => ({
    user,
    untouched: [...user.childIds].sort(() => random() - 0.5),
    front: [],
    total: user.childIds.length,
    checking: false,
    lost: false,
  }))
  const report: WriterReport = {
    seconds: 0,
    writes: 0,
    writesPerSecond: 0,
    byKind: { insert: 0, rename: 0, delete: 0 },
    writeErrors: 0,
    commitMs: { p50: 0, p99: 0, max: 0 },
    maxLagMs: 0,
    lastCommitAt: 0,
    checks: 0,
    stale: 0,
    checkFailures: 0,
    checkMs: { p50: 0, p99: 0, max: 0 },
    examples: [],
  }
  const note = (text: string) => {
    if (report.examples.length < MAX_EXAMPLES) report.examples.push(text)
  }
  const commitTimes: number[] = []
  const checkTimes: number[] = []
  const inFlight = new Set<Promise<void>>()
  let sequence = 0

  const choose = (state: UserState): Write => {
    const { front } = state
    const canRename = state.untouched.length > 0 || front.length > 0
    const roll = random()
    let kind: Write['kind']
    if (front.length >= FRONT_MAX) kind = 'delete'
    else if (front.length === 0) kind = roll < 0.5 || !canRename ? 'insert' : 'rename'
    else kind = roll < 1 / 3 ? 'insert' : roll < 2 / 3 && canRename ? 'rename' : 'delete'
    const name = `0000 w${++sequence}`
    if (kind === 'insert') return { kind, folder: { id: randomUUID(), name, inserted: true } }
    if (kind === 'rename') {
      const original = state.untouched.pop()
      if (original !== undefined) return { kind, folder: { id: original, name, inserted: false } }
      const mine = front.splice(Math.floor(random() * front.length), 1)[0] as FrontFolder
      return { kind, folder: { ...mine, name } }
    }
    return { kind, folder: front.splice(Math.floor(random() * front.length), 1)[0] as FrontFolder }
  }

  const apply = async (state: UserState, write: Write) => {
    const now = Date.now()
    const { ownerId, folderId } = state.user
    const { id, name } = write.folder
    if (write.kind === 'insert') await db.run(sql.insert, [id, name, folderId, ownerId, now, now])
    else if (write.kind === 'rename') await db.run(sql.rename, [name, now, id, ownerId])
    else if (write.folder.inserted) await db.run(sql.hardDelete, [id, ownerId])
    else await db.run(sql.softDelete, [now, id, ownerId])
  }

  const fetchPage = (state: UserState): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: plan.port,
          path: `/v1/folders?folder_id=${state.user.folderId}&page=1&limit=${plan.limit}`,
          headers: { cookie: `session_id=${state.user.sessionId}` },
          agent,
          timeout: 10_000,
        },
        (res) => {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => (body += chunk))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
          res.on('error', reject)
        },
      )
      req.on('timeout', () => req.destroy(new Error('timeout after 10 s')))
      req.on('error', reject)
      req.end()
    })

  const check = async (state: UserState, write: Write, committedAt: number) => {
    report.checks++
    let answer: { status: number; body: string }
    try {
      answer = await fetchPage(state)
    } catch (error) {
      report.checkFailures++
      note(`check of ${write.kind} ${write.folder.id}: ${(error as Error).message}`)
      return
    }
    checkTimes.push(performance.now() - committedAt)
    if (answer.status !== 200) {
      report.checkFailures++
      note(`check of ${write.kind} ${write.folder.id}: status ${answer.status}`)
      return
    }
    const body = JSON.parse(answer.body) as ListBody
    const listed = (body.folders ?? []).find((f) => f.id === write.folder.id)
    const problem =
      body.total !== state.total
        ? `total ${body.total}, expected ${state.total}`
        : write.kind === 'delete'
          ? listed === undefined
            ? null
            : 'still listed'
          : listed === undefined
            ? 'not on page 1'
            : listed.name !== write.folder.name
              ? `named '${listed.name}', expected '${write.folder.name}'`
              : null
    if (problem !== null) {
      report.stale++
      note(`stale after ${write.kind} of ${write.folder.id} (user ${state.user.ownerId}): ${problem}`)
    }
  }

  const started = performance.now()
  const interval = 1000 / plan.rate
  const deadline = started + plan.seconds * 1000
  for (let n = 0; !stopped() && performance.now() < deadline; n++) {
    const due = started + n * interval
    const wait = due - performance.now()
    if (wait > 0) await sleep(wait)
    else report.maxLagMs = Math.max(report.maxLagMs, -wait)
    if (stopped()) break

    // A user with no write or check in flight, so each check sees exactly its own write.
    let state: UserState | undefined
    for (let tries = 0; tries < 20 && state === undefined; tries++) {
      const candidate = states[Math.floor(random() * states.length)] as UserState
      if (!candidate.checking && !candidate.lost) state = candidate
    }
    if (state === undefined) continue
    const chosen = state
    const write = choose(chosen)
    chosen.checking = true
    const pending = (async () => {
      const t0 = performance.now()
      try {
        await apply(chosen, write)
      } catch (error) {
        report.writeErrors++
        chosen.lost = true
        note(`${write.kind} ${write.folder.id}: ${(error as Error).message}`)
        return
      }
      const committedAt = performance.now()
      report.lastCommitAt = Math.max(report.lastCommitAt, Date.now())
      commitTimes.push(committedAt - t0)
      report.writes++
      report.byKind[write.kind]++
      if (write.kind === 'insert') chosen.total++
      if (write.kind === 'delete') chosen.total--
      if (write.kind !== 'delete') chosen.front.push(write.folder)
      await check(chosen, write, committedAt)
    })().finally(() => {
      chosen.checking = false
      inFlight.delete(pending)
    })
    inFlight.add(pending)
    if (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight)
  }
  report.seconds = (performance.now() - started) / 1000
  await Promise.all(inFlight)
  agent.destroy()
  await db.close()
  report.writesPerSecond = report.writes / report.seconds
  report.commitMs = percentiles(commitTimes)
  report.checkMs = percentiles(checkTimes)
  return report
}

// Run as a script (not when imported for its types).
if (process.argv[1]?.endsWith('writer.ts')) {
  const planFile = process.argv[2]
  if (planFile === undefined) {
    process.stderr.write('usage: writer.ts PLAN_JSON\n')
    process.exit(2)
  }
  const plan = JSON.parse(readFileSync(planFile, 'utf8')) as WriterPlan
  let stop = false
  process.on('SIGTERM', () => (stop = true))
  process.on('SIGINT', () => (stop = true))
  const report = await runWriter(plan, () => stop)
  process.stdout.write(`WRITER_JSON ${JSON.stringify(report)}\n`)
}
