import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import postgres from 'postgres'
import { generateDataSet } from './lib/dataset.js'
import { benchDatabase, redactUrl } from './lib/postgres.js'
import { importData } from './lib/service.js'

/**
 * The session path on PostgreSQL with each maintained Node driver: `pg` (node-postgres,
 * what the service uses) and `postgres` (postgres.js). Both run the statement of
 * PostgresStore.findSessionUser, prepared, over a pool of the service's default size
 * (DB_POOL_SIZE 10), from `--concurrency` callers at once, on a fresh database of
 * `--users` users with one session each. Rounds alternate between the drivers so that
 * other load on the machine falls on both alike.
 *
 *   node --import tsx bench/pg-drivers.ts [--db URL] [--queries N] [--concurrency N] [--rounds N]
 *
 * The URL defaults to TEST_DATABASE_URL; a database is created for the run and dropped after.
 */

const root = fileURLToPath(new URL('..', import.meta.url))

/** The statement of PostgresStore.findSessionUser (SESSION_USERS, src/store/postgres/postgres-statements.ts). */
const SESSION_SQL = `SELECT u.id, u.username, u.avatar_url, u.is_suspended, u.listing_generation::text AS generation
  FROM sessions s JOIN users u ON u.id = s.user_id
 WHERE s.id = $1 AND (s.expires_at IS NULL OR s.expires_at > $2::timestamptz)`

const POOL_SIZE = 10

interface Round {
  driver: 'pg' | 'postgres'
  queries: number
  seconds: number
  perSecond: number
  /** this process's CPU per query: the driver's own cost */
  clientCpuUs: number
  p50Ms: number
  p99Ms: number
}

type Query = (sessionId: string, now: string) => Promise<number>

async function measure(
  driver: Round['driver'],
  query: Query,
  sessions: string[],
  queries: number,
  concurrency: number,
): Promise<Round> {
  const latencies: number[] = []
  let next = 0
  const cpu = process.cpuUsage()
  const started = performance.now()
  const worker = async () => {
    while (next < queries) {
      const sessionId = sessions[next++ % sessions.length] as string
      const t0 = performance.now()
      const rows = await query(sessionId, new Date().toISOString())
      latencies.push(performance.now() - t0)
      if (rows !== 1) throw new Error(`${driver}: ${rows} rows for session ${sessionId}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.ceil(q * latencies.length) - 1] ?? 0
  return {
    driver,
    queries,
    seconds,
    perSecond: queries / seconds,
    clientCpuUs: (used.user + used.system) / queries,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      db: { type: 'string' },
      users: { type: 'string', default: '1000' },
      queries: { type: 'string', default: '20000' },
      concurrency: { type: 'string', default: '32' },
      rounds: { type: 'string', default: '3' },
    },
  })
  const base = values.db ?? process.env.TEST_DATABASE_URL
  if (base === undefined || base === '') throw new Error('pass --db postgres://... or set TEST_DATABASE_URL')
  const queries = Number(values.queries)
  const concurrency = Number(values.concurrency)
  const rounds = Number(values.rounds)

  const database = await benchDatabase(base)
  const tmp = mkdtempSync(join(tmpdir(), 'folder-service-drivers-'))
  const pool = new pg.Pool({ connectionString: database.url, max: POOL_SIZE })
  const sql = postgres(database.url, { max: POOL_SIZE, prepare: true, onnotice: () => {} })
  let userIds: string[] = []
  try {
    const data = generateDataSet(join(tmp, 'data.json'), {
      users: Number(values.users),
      rootFolders: 1,
      smallFolders: 1,
      huge: 0,
      seed: 1,
    })
    userIds = data.userIds
    await importData({
      root,
      url: database.url,
      file: data.file,
      folders: data.counts.folders,
      timeoutSeconds: 600,
      log: (line) => process.stdout.write(`${line}\n`),
    })
    const sessions = data.small.map((f) => f.sessionId)
    process.stdout.write(
      `session statement on ${redactUrl(database.url)} (${database.mode}): ${sessions.length} sessions, ` +
        `${queries} queries a round, ${concurrency} at once, pools of ${POOL_SIZE}\n`,
    )

    const drivers: Record<Round['driver'], Query> = {
      pg: async (id, now) =>
        (await pool.query({ name: 'session_user', text: SESSION_SQL, values: [id, now] })).rows.length,
      postgres: async (id, now) => (await sql.unsafe(SESSION_SQL, [id, now], { prepare: true })).length,
    }
    // Connect and prepare on every pooled connection before timing.
    for (const [name, query] of Object.entries(drivers))
      await measure(name as Round['driver'], query, sessions, 2_000, concurrency)

    const results: Round[] = []
    for (let round = 0; round < rounds; round++) {
      const order: Round['driver'][] = round % 2 === 0 ? ['pg', 'postgres'] : ['postgres', 'pg']
      for (const driver of order) {
        const r = await measure(driver, drivers[driver], sessions, queries, concurrency)
        results.push(r)
        process.stdout.write(
          `  round ${round + 1} ${driver.padEnd(8)} ${Math.round(r.perSecond).toLocaleString('en').padStart(7)} queries/s  ` +
            `p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms  client CPU ${r.clientCpuUs.toFixed(0)} us/query\n`,
        )
      }
    }
    for (const driver of ['pg', 'postgres'] as const) {
      const mine = results.filter((r) => r.driver === driver).sort((a, b) => a.perSecond - b.perSecond)
      const median = mine[Math.floor(mine.length / 2)] as Round
      const cpu = mine.map((r) => r.clientCpuUs).sort((a, b) => a - b)[Math.floor(mine.length / 2)] as number
      process.stdout.write(
        `median ${driver.padEnd(8)} ${Math.round(median.perSecond).toLocaleString('en')} queries/s, client CPU ${cpu.toFixed(0)} us/query\n`,
      )
    }
  } finally {
    await pool.end()
    await sql.end({ timeout: 5 })
    const warning = await database.dispose(userIds)
    if (warning !== null) process.stderr.write(`${warning}\n`)
    rmSync(tmp, { recursive: true, force: true })
  }
}

await main()
