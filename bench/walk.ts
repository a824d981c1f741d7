import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { onEachBackend, runBenchCommand } from './lib/command.js'
import { freePort, HOST, stopChild } from './lib/processes.js'
import { importData, startService } from './lib/service.js'
import { LISTING_ORDERS, type ListingOrder } from '../src/ordering/listing-orders.js'

/**
 * `npm run bench:walk`: what deep pages cost, by offset and by continuation token, on each
 * backend. One connection, one request at a time, every answer distinct so that the listing
 * cache never answers: a sync client's walk, not a load test.
 *
 * - page 1 of small folders (100 children; a different folder or limit each time)
 * - middle pages of a 100,000-child folder by offset (`page=`), and by cursor (the `next`
 *   links collected on a walk, asked again with another limit, so not cached)
 * - the whole walk of that folder by following `next`, against pages x p50(page 1)
 * - `order=name_natural` beside `order=name` (compareOrders): page 1, a middle page by
 *   offset and one by cursor of the 100,000-child folder, each uncached and then cached
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
/** pages of each kind and order in the orders' comparison, at limits 100, 99, ... */
const ORDER_SAMPLES = 50

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

/** p50 of the same pages read in each listing order */
export interface OrderPair {
  nameP50Ms: number
  naturalP50Ms: number
}

/** order=name_natural beside order=name, on the 100,000-child folder */
export interface OrderFigures {
  firstUncached: OrderPair
  firstCached: OrderPair
  middleOffsetUncached: OrderPair
  middleOffsetCached: OrderPair
  middleCursorUncached: OrderPair
  middleCursorCached: OrderPair
}

export interface WalkFigures {
  backend: string
  smallFirstP50Ms: number
  middleOffsetP50Ms: number
  middleCursorP50Ms: number
  orders: OrderFigures
  walkPages: number
  walkSeconds: number
  /** walk time / (pages x p50 of page 1): 1 is linear at page-1 cost */
  walkRatio: number
  /** another user's p50, idle and while the first requests random middle pages at its rate limit */
  bystanderIdleP50Ms: number
  bystanderUnderAttackP50Ms: number
  attackRequests: number
}

type OrderRuns = Record<ListingOrder, { times: number[]; nexts: string[] }>

/**
 * `count` pages in both orders, one order right after the other and the first of each pair
 * alternating, so that both meet the same moment of a shared machine: each order's times
 * and `next` links.
 */
async function pairedOrders(
  port: number,
  count: number,
  pathOf: (order: ListingOrder, i: number) => string,
): Promise<OrderRuns> {
  const runs: OrderRuns = { name: { times: [], nexts: [] }, name_natural: { times: [], nexts: [] } }
  for (let i = 0; i < count; i++) {
    for (const order of i % 2 === 0 ? LISTING_ORDERS : [...LISTING_ORDERS].reverse()) {
      const path = pathOf(order, i)
      const answer = await get(port, path)
      if (answer.status !== 200) throw new Error(`${path}: status ${answer.status}`)
      runs[order].times.push(answer.ms)
      if (answer.next !== null) runs[order].nexts.push(answer.next)
    }
  }
  return runs
}

const pairOf = (runs: OrderRuns): OrderPair => ({
  nameP50Ms: p50(runs.name.times),
  naturalP50Ms: p50(runs.name_natural.times),
})

/**
 * The orders side by side on the huge folder, before anything else reads it so that no
 * answer is cached: page 1, a middle page by offset and the page after it by cursor (its
 * `next` link), at limits 100 down to 101 - ORDER_SAMPLES so that every URL is new, each kind
 * read twice: uncached, then the same URLs again from the listing cache.
 */
async function compareOrders(port: number, huge: number): Promise<OrderFigures> {
  const inOrder = (path: string, order: ListingOrder) => `${path}&order=${order}`
  const limitOf = (i: number) => 100 - i
  const first = (order: ListingOrder, i: number) =>
    inOrder(`/v1/folders?folder_id=${HUGE}&limit=${limitOf(i)}`, order)
  const middle = (order: ListingOrder, i: number) =>
    inOrder(
      `/v1/folders?folder_id=${HUGE}&page=${Math.floor(huge / 2 / limitOf(i)) + 1}&limit=${limitOf(i)}`,
      order,
    )
  // Each order's checkpoints are read once per listing generation: not in the samples.
  for (const order of LISTING_ORDERS)
    await timed(port, [inOrder(`/v1/folders?folder_id=${HUGE}&page=${Math.floor(huge / 2)}&limit=1`, order)])
  const firstUncached = await pairedOrders(port, ORDER_SAMPLES, first)
  const firstCached = await pairedOrders(port, ORDER_SAMPLES, first)
  const offsetUncached = await pairedOrders(port, ORDER_SAMPLES, middle)
  const offsetCached = await pairedOrders(port, ORDER_SAMPLES, middle)
  const cursor = (order: ListingOrder, i: number) => {
    const next = offsetUncached[order].nexts[i]
    if (next === undefined) throw new Error(`middle page ${i} in ${order} order has no next link`)
    return next
  }
  const cursorUncached = await pairedOrders(port, ORDER_SAMPLES, cursor)
  const cursorCached = await pairedOrders(port, ORDER_SAMPLES, cursor)
  return {
    firstUncached: pairOf(firstUncached),
    firstCached: pairOf(firstCached),
    middleOffsetUncached: pairOf(offsetUncached),
    middleOffsetCached: pairOf(offsetCached),
    middleCursorUncached: pairOf(cursorUncached),
    middleCursorCached: pairOf(cursorCached),
  }
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
    const orders = await compareOrders(port, huge)
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
      orders,
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
  const pair = (label: string, { nameP50Ms, naturalP50Ms }: OrderPair, target: string) =>
    log(
      `  ${label.padEnd(36)} ${ms(nameP50Ms)} -> ${ms(naturalP50Ms)}  (${(naturalP50Ms / nameP50Ms).toFixed(2)}x${target})`,
    )
  const { orders } = f
  log(`  order=name -> order=name_natural, the huge folder, p50 (limits 100 down to ${101 - ORDER_SAMPLES}):`)
  pair('page 1, uncached', orders.firstUncached, '; target <= 1.3x')
  pair('page 1, cached', orders.firstCached, '')
  pair('middle page by offset, uncached', orders.middleOffsetUncached, '; target <= 1.3x')
  pair('middle page by offset, cached', orders.middleOffsetCached, '')
  pair('middle page by cursor, uncached', orders.middleCursorUncached, '; target <= 1.3x')
  pair('middle page by cursor, cached', orders.middleCursorCached, '')
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
