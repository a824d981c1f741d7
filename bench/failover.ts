import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { ensureBuilt } from '../harness/build.js'
import {
  crashPrimary,
  formationDatabase,
  formationHealthy,
  primaryNode,
  psqlInsert,
  restartNode,
  switchover,
  type PsqlWrite,
} from '../harness/failover-formation.js'
import { validateImport } from '../src/import/validate-import.js'
import { openStore } from '../src/store/open-store.js'
import { freePort, HOST, stopAllChildren } from './lib/processes.js'
import { SERVICE_ENV, startService } from './lib/service.js'

/**
 * `npm run bench:failover`: what a move of the PostgreSQL primary costs callers, on the
 * pg_auto_failover formation of .ci/postgres-failover.sh (TEST_FAILOVER_URL, as root). One
 * service on the formation's multi-host URL; 8 readers (half the same page, a cache hit
 * between writes; half pages of changing sizes, a miss each) and a psql writer (10 inserts/s)
 * run throughout a planned switchover, then a crash of the primary (keeper and postgres
 * killed). For each event: answers by status, the error window (first to last answer that is
 * not 200), when the new primary accepted writes (the writer's first success), when the
 * service answered 200 again after that, and the slowest answer.
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => process.stdout.write(`${line}\n`)
const WAIT_MS = Number(process.env.FAILOVER_WAIT_MS ?? 10_000)
const READERS = 8
const OWNER = randomUUID()
const SESSION = randomUUID()
const PARENT = randomUUID()

interface Answer {
  startedAt: number
  endedAt: number
  status: number
}

async function reader(base: string, n: number, answers: Answer[], running: () => boolean): Promise<void> {
  for (let i = 0; running(); i++) {
    const limit = n % 2 === 0 ? 1000 : 500 + (i % 400)
    const startedAt = Date.now()
    let status: number
    try {
      const res = await fetch(`${base}/v1/folders?folder_id=${PARENT}&limit=${limit}`, {
        headers: { cookie: `session_id=${SESSION}` },
        signal: AbortSignal.timeout(WAIT_MS + 10_000),
      })
      await res.arrayBuffer()
      status = res.status
    } catch {
      status = 0
    }
    answers.push({ startedAt, endedAt: Date.now(), status })
    await sleep(10)
  }
}

function figures(event: string, answers: Answer[], from: number, accepted: PsqlWrite | undefined): string {
  const mine = answers.filter((a) => a.startedAt >= from)
  const byStatus: Record<string, number> = {}
  for (const a of mine) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1
  const errors = mine.filter((a) => a.status !== 200)
  const window =
    errors.length === 0
      ? 0
      : Math.max(...errors.map((a) => a.endedAt)) - Math.min(...errors.map((a) => a.startedAt))
  const acceptedAt = accepted?.endedAt ?? NaN
  // Back: the first answer after the new primary accepted writes from which on every answer is 200.
  const lastError = Math.max(acceptedAt, ...errors.map((a) => a.endedAt))
  const back = mine.find((a) => a.status === 200 && a.startedAt >= lastError)
  const recovery = back === undefined ? NaN : Math.max(0, back.endedAt - acceptedAt)
  const slowest = Math.max(...mine.map((a) => a.endedAt - a.startedAt))
  return (
    `| ${event} | ${JSON.stringify(byStatus).replace(/"/g, '')} | ${window} | ${acceptedAt - from} | ` +
    `${recovery} | ${slowest} |`
  )
}

async function main(): Promise<void> {
  if ((process.env.TEST_FAILOVER_URL ?? '') === '') {
    throw new Error('set TEST_FAILOVER_URL (.ci/postgres-failover.sh, as root)')
  }
  const build = ensureBuilt(root, true)
  log(`build: ${build.action}`)
  if (!formationHealthy()) throw new Error('the formation needs a primary and two secondaries')
  const db = await formationDatabase()
  const store = await openStore({
    databaseUrl: db.url,
    dbPoolSize: 2,
    dbConnectTimeoutMs: 3000,
    dbStatementTimeoutMs: 5000,
    sqliteBusyTimeoutMs: 1000,
  })
  await store.importData(
    validateImport(
      {
        users: [{ id: OWNER, username: 'failover-bench' }],
        sessions: [{ id: SESSION, user_id: OWNER }],
        folders: [
          { id: PARENT, name: 'followed', owner_id: OWNER },
          ...Array.from({ length: 200 }, (_, i) => ({
            id: randomUUID(),
            name: `seed ${i}`,
            folder_id: PARENT,
            owner_id: OWNER,
          })),
        ],
      },
      Date.now(),
    ),
  )
  await store.close()
  const port = await freePort()
  await startService({
    root,
    url: db.url,
    port,
    env: { ...process.env, ...SERVICE_ENV, FAILOVER_WAIT_MS: String(WAIT_MS), DB_CONNECT_TIMEOUT_MS: '1000' },
  })
  const base = `http://${HOST}:${port}`
  const answers: Answer[] = []
  const writes: PsqlWrite[] = []
  let running = true
  const readers = Array.from({ length: READERS }, (_, n) => reader(base, n, answers, () => running))
  const writer = (async () => {
    for (let i = 0; running; i++) {
      const sql = `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at) VALUES ('${randomUUID()}', 'write ${i}', '${PARENT}', '${OWNER}', false, now(), now())`
      writes.push(await psqlInsert(db.url, sql, `write ${i}`))
      await sleep(100)
    }
  })()
  const rows: string[] = []
  try {
    await sleep(3000)
    for (const event of ['switchover', 'crash'] as const) {
      while (!formationHealthy()) await sleep(500)
      await sleep(2000)
      const from = Date.now()
      const before = primaryNode()?.name
      const crashed = event === 'crash' ? crashPrimary() : (await switchover(), undefined)
      let accepted: PsqlWrite | undefined
      while (accepted === undefined && Date.now() - from < 90_000) {
        accepted = writes.find((w) => w.ok && w.startedAt > from)
        await sleep(100)
      }
      await sleep(WAIT_MS + 2000)
      if (crashed !== undefined) restartNode(crashed)
      log(`${event}: primary ${before} -> ${primaryNode()?.name ?? 'none'}`)
      rows.push(figures(event, answers, from, accepted))
    }
  } finally {
    running = false
    await Promise.all([...readers, writer])
    await stopAllChildren()
    await db.drop().catch(() => undefined)
  }
  log(`FAILOVER_WAIT_MS ${WAIT_MS}, ${READERS} readers, a psql writer; times in ms from the event`)
  log(
    '| event | answers by status | error window | writes accepted again | service back after that | slowest answer |',
  )
  log('| --- | --- | --- | --- | --- | --- |')
  for (const row of rows) log(row)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
