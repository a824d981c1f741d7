import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { openRawSql } from '../test/helpers/raw-sql.js'
import { onEachBackend, runBenchCommand } from './command.js'
import { readCpuSeconds, readRss } from './process-stats.js'
import { freePort, HOST, stopChild } from './processes.js'
import { importData, SERVICE_ENV, startService } from './service.js'

/**
 * `npm run bench:feed`: what the changes feed costs, on each backend.
 *
 * - draining 1,000 changes (renames made by raw SQL) of a 100,000-child folder, one
 *   answer of limit 1000, against one uncached listing page of that folder (limit 100);
 * - WAITERS held requests (wait=60) in one process: its memory above the idle process,
 *   its CPU while nothing changes, and the time from a raw-SQL commit to each answer
 *   (p50, p99).
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => process.stdout.write(`${line}\n`)
const USER = 'fe000000-0000-4000-8000-000000000001'
const SESSION = 'fe000000-0000-4000-8000-000000005e55'
const HUGE = 'fe000000-0000-4000-8000-0000000f0000'
const CHANGES = 1000
const SAMPLES = 30
const IDLE_SECONDS = 10

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
  waiters: number
  idleRssMb: number
  waitersRssAboveIdleMb: number
  idleCpuPercent: number
  commitToAnswerP50Ms: number
  commitToAnswerP99Ms: number
  answered: number
}

async function measure(
  backend: string,
  url: string,
  data: { file: string; folders: number },
  waiters: number,
): Promise<FeedFigures> {
  const huge = data.folders - 1
  await importData({ root, url, ...data, timeoutSeconds: 900, log })
  const port = await freePort()
  const service = await startService({
    root,
    url,
    port,
    // Every held request is one session's, on a connection of its own: both bounds raised to
    // hold them all, the connection limit above the held requests, as the service requires.
    env: {
      ...process.env,
      ...SERVICE_ENV,
      LONG_POLL_MAX_WAITERS: String(waiters),
      LONG_POLL_PER_SESSION: String(waiters),
      MAX_CONNECTIONS: String(2 * waiters + 100),
    },
  })
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

    // Held requests, all on the present position of the same owner's folder.
    const present = JSON.parse((await get(port, changesPath, one)).body) as { cursor: string }
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const idleRss = readRss(service.pid) ?? Number.NaN
    const many = new Agent({ keepAlive: false, maxSockets: Infinity })
    let answeredAt: number[] = []
    const held: Promise<void>[] = []
    let failed = 0
    let firstFailure = ''
    for (let i = 0; i < waiters; i++) {
      held.push(
        get(port, `${changesPath}&cursor=${present.cursor}&wait=60`, many).then(
          (answer) => {
            if (answer.status !== 200) throw new Error(`held: ${answer.status} ${answer.body}`)
            answeredAt.push(performance.now())
          },
          (error: unknown) => {
            failed++
            firstFailure ||= String(error)
          },
        ),
      )
      // paced, so that connections are not refused by a full accept queue
      if (i % 250 === 249) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await new Promise((resolve) => setTimeout(resolve, 5000))
    if (answeredAt.length > 0)
      throw new Error(`${answeredAt.length} held requests answered before any change`)
    const heldRss = readRss(service.pid) ?? Number.NaN
    const cpuBefore = readCpuSeconds(service.pid) ?? Number.NaN
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000))
    const cpuAfter = readCpuSeconds(service.pid) ?? Number.NaN
    answeredAt = []
    const committed = performance.now()
    await sql.run('UPDATE folders SET name = ? WHERE id = ?', `wake ${randomUUID()}`, childId(1))
    await Promise.all(held)
    const delays = answeredAt.map((at) => at - committed)
    if (failed > 0) log(`  ${failed} held requests failed (first: ${firstFailure})`)
    many.destroy()
    return {
      backend,
      listingPageP50Ms: quantile(listing, 0.5),
      drainP50Ms: quantile(drains, 0.5),
      drainEntries: entries,
      waiters,
      idleRssMb: idleRss / 2 ** 20,
      waitersRssAboveIdleMb: (heldRss - idleRss) / 2 ** 20,
      idleCpuPercent: ((cpuAfter - cpuBefore) / IDLE_SECONDS) * 100,
      commitToAnswerP50Ms: quantile(delays, 0.5),
      commitToAnswerP99Ms: quantile(delays, 0.99),
      answered: delays.length,
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
  log(
    `  ${f.waiters} held requests: memory above idle (${f.idleRssMb.toFixed(0)} MB)   ${f.waitersRssAboveIdleMb.toFixed(1)} MB  (target < 100 MB)`,
  )
  log(
    `  ${f.waiters} held requests: CPU while nothing changes          ${f.idleCpuPercent.toFixed(2)} % of a core  (target < 5 %)`,
  )
  log(
    `  commit to answer (${f.answered} answers)          p50 ${f.commitToAnswerP50Ms.toFixed(0)} ms, p99 ${f.commitToAnswerP99Ms.toFixed(0)} ms  (target p99 < 1000 ms)`,
  )
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

async function main(): Promise<void> {
  await runBenchCommand({ waiters: '10000' }, ({ huge, backend, postgresUrl, numbers }) =>
    runFeedBench({ huge, waiters: numbers.waiters ?? 10_000, backend, postgresUrl }),
  )
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main()
