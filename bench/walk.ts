import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { onEachBackend, runBenchCommand } from './command.js'
import { freePort, HOST, stopChild } from './processes.js'
import { importData, startService } from './service.js'

/**
 * `npm run bench:walk`: what deep pages cost, by offset and by continuation token, on each
 * backend. One connection, one request at a time, every answer distinct so that the listing
 * cache never answers: a sync client's walk, not a load test.
 *
 * - page 1 of small folders (100 children; a different folder or limit each time)
 * - middle pages of a 100,000-child folder by offset (`page=`), and by cursor (the `next`
 *   links collected on a walk, asked again with another limit, so not cached)
 * - the whole walk of that folder by following `next`, against pages x p50(page 1)
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => process.stdout.write(`${line}\n`)
const USER = 'be000000-0000-4000-8000-000000000001'
const SESSION = 'be000000-0000-4000-8000-000000005e55'
const HUGE = 'be000000-0000-4000-8000-0000000f0000'
const SMALL_FOLDERS = 200
const SMALL_CHILDREN = 100
const LIMIT = 50
const MIDDLE_SAMPLES = 100
/** another user, who only lists their own small folders while the first one digs deep */
const VICTIM = 'be000000-0000-4000-8000-000000000002'
const VICTIM_SESSION = 'be000000-0000-4000-8000-000000005e56'
const VICTIM_FOLDERS = 50
/** the default RATE_LIMIT_PER_MINUTE (6,000) of one session, per second */
const ATTACK_PER_SECOND = 100
const PHASE_MS = 4000

const id = (kind: number, n: number) =>
  `be${kind.toString(16).padStart(6, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

/** Writes the walk's data file; returns how many folders it holds. */
function writeDataFile(file: string, huge: number): number {
  const folders: object[] = [{ id: HUGE, name: 'huge', owner_id: USER }]
  for (let i = 0; i < huge; i++) {
    // Scattered names, so the index order is not the insertion order.
    const name = `item ${((i * 7919) % huge).toString().padStart(7, '0')}`
    folders.push({ id: id(1, i), name, owner_id: USER, folder_id: HUGE })
  }
  for (let s = 0; s < SMALL_FOLDERS; s++) {
    folders.push({ id: id(2, s), name: `small ${s}`, owner_id: USER })
    for (let c = 0; c < SMALL_CHILDREN; c++) {
      folders.push({ id: id(3, s * 1000 + c), name: `child ${c}`, owner_id: USER, folder_id: id(2, s) })
    }
  }
  for (let v = 0; v < VICTIM_FOLDERS; v++) {
    folders.push({ id: id(4, v), name: `mine ${v}`, owner_id: VICTIM })
    for (let c = 0; c < 20; c++) {
      folders.push({ id: id(5, v * 100 + c), name: `sub ${c}`, owner_id: VICTIM, folder_id: id(4, v) })
    }
  }
  const doc = {
    users: [
      { id: USER, username: 'walker' },
      { id: VICTIM, username: 'bystander' },
    ],
    sessions: [
      { id: SESSION, user_id: USER },
      { id: VICTIM_SESSION, user_id: VICTIM },
    ],
    folders,
  }
  writeFileSync(file, JSON.stringify(doc))
  return folders.length
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 })
const victimAgent = new Agent({ keepAlive: true, maxSockets: 1 })

/** One GET on the kept-alive connection: milliseconds, status and the `next` link. */
function get(
  port: number,
  path: string,
  as: { session: string; agent: Agent } = { session: SESSION, agent },
): Promise<{ ms: number; status: number; next: string | null }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = request(
      { host: HOST, port, path, agent: as.agent, headers: { cookie: `session_id=${as.session}` } },
      (res) => {
        res.resume()
        res.on('end', () => {
          const link = String(res.headers.link ?? '')
          const next = /<([^>]+)>; rel="next"/.exec(link)?.[1] ?? null
          resolve({ ms: performance.now() - started, status: res.statusCode ?? 0, next })
        })
      },
    )
    req.on('error', reject)
    req.end()
  })
}

const p50 = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

async function timed(port: number, paths: string[]): Promise<number[]> {
  const times: number[] = []
  for (const path of paths) {
    const { ms, status } = await get(port, path)
    if (status !== 200) throw new Error(`${path}: status ${status}`)
    times.push(ms)
  }
  return times
}

export interface WalkFigures {
  backend: string
  smallFirstP50Ms: number
  middleOffsetP50Ms: number
  middleCursorP50Ms: number
  /** the same three in order=name_natural */
  natural: { smallFirstP50Ms: number; middleOffsetP50Ms: number; middleCursorP50Ms: number }
  walkPages: number
  walkSeconds: number
  /** walk time / (pages x p50 of page 1): 1 is linear at page-1 cost */
  walkRatio: number
  /** another user's p50, idle and while the first requests random middle pages at its rate limit */
  bystanderIdleP50Ms: number
  bystanderUnderAttackP50Ms: number
  attackRequests: number
}

/** The bystander lists their folders in turn, one request at a time, for PHASE_MS. */
async function bystander(port: number): Promise<number[]> {
  const times: number[] = []
  const until = performance.now() + PHASE_MS
  for (let i = 0; performance.now() < until; i++) {
    const answer = await get(port, `/v1/folders?folder_id=${id(4, i % VICTIM_FOLDERS)}&limit=20`, {
      session: VICTIM_SESSION,
      agent: victimAgent,
    })
    if (answer.status !== 200) throw new Error(`bystander: status ${answer.status}`)
    times.push(answer.ms)
  }
  return times
}

/** Random middle pages of the huge folder, limit 1, paced at the rate limit of one session. */
async function attack(port: number, huge: number): Promise<number> {
  let sent = 0
  const started = performance.now()
  const until = started + PHASE_MS
  while (performance.now() < until) {
    const page = Math.floor(huge / 4 + Math.random() * (huge / 2))
    await get(port, `/v1/folders?folder_id=${HUGE}&page=${page}&limit=1`)
    sent++
    const due = started + (sent * 1000) / ATTACK_PER_SECOND
    const wait = due - performance.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  }
  return sent
}

async function measure(
  backend: string,
  url: string,
  data: { file: string; folders: number },
  huge: number,
): Promise<WalkFigures> {
  await importData({ root, url, ...data, timeoutSeconds: 900, log })
  const port = await freePort()
  const service = await startService({ root, url, port })
  try {
    // Warm-up: compile the statements, fill the page cache of the database.
    await timed(port, [
      `/v1/folders?folder_id=${id(2, 0)}&limit=10`,
      `/v1/folders?folder_id=${HUGE}&limit=10`,
    ])
    const smallPaths: string[] = []
    for (let limit = LIMIT; smallPaths.length < 1000; limit--) {
      for (let s = 0; s < SMALL_FOLDERS; s++)
        smallPaths.push(`/v1/folders?folder_id=${id(2, s)}&limit=${limit}`)
    }
    const small = await timed(port, smallPaths.slice(0, 1000))

    const pages = Math.ceil(huge / LIMIT)
    // Fewer samples in a folder too small for MIDDLE_SAMPLES middle pages (never page 0 or below).
    const samples = Math.min(MIDDLE_SAMPLES, Math.max(1, Math.floor(pages / 2) - 2))
    const middle = Math.max(3, Math.floor(pages / 2) - Math.floor(samples / 2))
    const offsetPaths = Array.from(
      { length: samples },
      (_, i) => `/v1/folders?folder_id=${HUGE}&page=${middle + i}&limit=${LIMIT}`,
    )
    const middleOffset = await timed(port, offsetPaths)

    // The walk: follow next from page 1 to the end, keeping each next link.
    const nexts: string[] = []
    const walkStarted = performance.now()
    let path: string | null = `/v1/folders?folder_id=${HUGE}&limit=${LIMIT}`
    let walked = 0
    while (path !== null) {
      const answer = await get(port, path)
      if (answer.status !== 200) throw new Error(`${path}: status ${answer.status}`)
      walked++
      if (answer.next !== null) nexts.push(answer.next)
      path = answer.next
    }
    const walkSeconds = (performance.now() - walkStarted) / 1000
    // The same middle pages by cursor, with another limit: not in the cache.
    const cursorPaths = nexts
      .slice(middle - 2, middle - 2 + samples)
      .map((next) => next.replace(`limit=${LIMIT}`, `limit=${LIMIT - 1}`))
    const middleCursor = await timed(port, cursorPaths)

    // The same pages in natural order (new URLs: uncached); its cursor pages start from the
    // next links of its middle offset pages, read with another limit.
    const naturally = (path: string) => `${path}&order=name_natural`
    const naturalSmall = await timed(port, smallPaths.slice(0, 1000).map(naturally))
    const naturalOffset = await timed(port, offsetPaths.map(naturally))
    const naturalNexts: string[] = []
    for (const path of offsetPaths) {
      const next = (await get(port, naturally(path))).next
      if (next !== null) naturalNexts.push(next.replace(`limit=${LIMIT}`, `limit=${LIMIT - 1}`))
    }
    const naturalCursor = await timed(port, naturalNexts)

    const idle = await bystander(port)
    const [underAttack, attackRequests] = await Promise.all([bystander(port), attack(port, huge)])

    const smallFirstP50Ms = p50(small)
    return {
      bystanderIdleP50Ms: p50(idle),
      bystanderUnderAttackP50Ms: p50(underAttack),
      attackRequests,
      backend,
      smallFirstP50Ms,
      middleOffsetP50Ms: p50(middleOffset),
      middleCursorP50Ms: p50(middleCursor),
      natural: {
        smallFirstP50Ms: p50(naturalSmall),
        middleOffsetP50Ms: p50(naturalOffset),
        middleCursorP50Ms: p50(naturalCursor),
      },
      walkPages: walked,
      walkSeconds,
      walkRatio: (walkSeconds * 1000) / (walked * smallFirstP50Ms),
    }
  } finally {
    await stopChild(service)
  }
}

function report(f: WalkFigures): void {
  const ms = (v: number) => `${v.toFixed(3)} ms`
  log(`== ${f.backend}`)
  log(`  page 1 of a small folder (uncached), p50       ${ms(f.smallFirstP50Ms)}`)
  log(
    `  middle page of the huge folder by offset, p50   ${ms(f.middleOffsetP50Ms)}  (${(f.middleOffsetP50Ms / f.smallFirstP50Ms).toFixed(2)}x page 1)`,
  )
  log(
    `  middle page of the huge folder by cursor, p50   ${ms(f.middleCursorP50Ms)}  (${(f.middleCursorP50Ms / f.smallFirstP50Ms).toFixed(2)}x page 1; target <= 1.5x)`,
  )
  const natural = (label: string, value: number, name: number) =>
    log(
      `  order=name_natural: ${label} ${ms(value)}  (${(value / name).toFixed(2)}x the name order; target <= 1.3x)`,
    )
  natural('page 1 of a small folder, p50    ', f.natural.smallFirstP50Ms, f.smallFirstP50Ms)
  natural('middle page by offset, p50       ', f.natural.middleOffsetP50Ms, f.middleOffsetP50Ms)
  natural('middle page by cursor, p50       ', f.natural.middleCursorP50Ms, f.middleCursorP50Ms)
  log(
    `  walk of all ${f.walkPages} pages by next            ${f.walkSeconds.toFixed(2)} s  (${f.walkRatio.toFixed(2)}x pages x p50(page 1); target <= 1.5x)`,
  )
  log(
    `  another user's p50, idle -> while one session asks ${f.attackRequests} random middle pages (${ATTACK_PER_SECOND}/s)   ` +
      `${ms(f.bystanderIdleP50Ms)} -> ${ms(f.bystanderUnderAttackP50Ms)}  (${(f.bystanderUnderAttackP50Ms / f.bystanderIdleP50Ms).toFixed(2)}x; target <= 2x)`,
  )
}

/**
 * The walk phase for `huge` children on the backends asked for: printed as it goes, and
 * returned for the report. Run alone by `npm run bench:walk`, and at the end of `npm run bench`.
 */
export async function runWalkBench(settings: {
  huge: number
  backend: 'all' | 'sqlite' | 'postgres'
  postgresUrl: string | null
}): Promise<WalkFigures[]> {
  const { huge, backend, postgresUrl } = settings
  log(
    `walks: one folder of ${huge.toLocaleString('en')} children, ${SMALL_FOLDERS} folders of ${SMALL_CHILDREN}; one connection, every answer uncached`,
  )
  return onEachBackend({
    name: 'walk',
    backend,
    postgresUrl,
    users: [USER, VICTIM],
    prepare: (tmp) => {
      const file = join(tmp, 'walk.json')
      return { file, folders: writeDataFile(file, huge) }
    },
    measure: (label, url, data) => measure(label, url, data, huge),
    report,
    log,
  })
}

async function main(): Promise<void> {
  await runBenchCommand({}, ({ huge, backend, postgresUrl }) => runWalkBench({ huge, backend, postgresUrl }))
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main()
