import { writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { onEachBackend, runBenchCommand } from './lib/command.js'
import { readCpuSeconds, readRss } from './lib/process-stats.js'
import { freePort, HOST, stopChild } from './lib/processes.js'
import { importData, SERVICE_ENV, startService } from './lib/service.js'
import { followUnderWrites, type FollowFigures } from './lib/tree-follow.js'

/**
 * `npm run bench:tree`: the tree download (GET /v1/folders/tree) against walking the same
 * tree through GET /v1/folders, on each backend. The tree: `--huge` / 100 folders at the
 * user's root, each holding 100 children (`--huge 100000`: 101,000 folders). The walk is
 * what a client that holds nothing must do: follow the `next` links (limit 100, the most)
 * of the root and of every folder it was given, leaves included, since a listing does not
 * say whether a folder has children. Its lower bound, a walk that knows which folders hold
 * children and lists only those, is measured too. The download follows the cursor (limit
 * 1000, the most) to has_more false. ROUNDS of each, alternating, with the listing cache
 * off (LISTING_CACHE_MB=0: each walk reads the database as the first would); the p50 of
 * each and the ratios, the service's and this process's CPU, and the service's memory
 * after each download. Then, on the same service and data, the tree followed under a
 * writer at 100 writes/s for `--follow-seconds` (lib/tree-follow.ts); a follower whose tree
 * differs from the listings' fails the bench.
 */

const root = fileURLToPath(new URL('..', import.meta.url))
const log = (line: string) => process.stdout.write(`${line}\n`)
const USER = '7e000000-0000-4000-8000-000000000001'
const SESSION = '7e000000-0000-4000-8000-000000005e55'
const CHILDREN = 100
const ROUNDS = 3
/** writes per second of the writer process while the tree is followed */
const WRITE_RATE = 100

const folderId = (n: number) => `7e000001-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

function writeDataFile(
  file: string,
  huge: number,
): { file: string; folders: number; parents: string[]; children: string[][] } {
  const parents = Array.from({ length: Math.max(1, Math.floor(huge / CHILDREN)) }, (_, i) => folderId(i))
  const folders: object[] = parents.map((id, i) => ({ id, name: `parent ${i}`, owner_id: USER }))
  const children = parents.map((parent, p) =>
    Array.from({ length: CHILDREN }, (_, c) => {
      const id = folderId(parents.length + p * CHILDREN + c)
      folders.push({ id, name: `child ${c}`, owner_id: USER, folder_id: parent })
      return id
    }),
  )
  writeFileSync(
    file,
    JSON.stringify({
      users: [{ id: USER, username: 'tree' }],
      sessions: [{ id: SESSION, user_id: USER }],
      folders,
    }),
  )
  return { file, folders: folders.length, parents, children }
}

const agent = new Agent({ keepAlive: true, maxSockets: 1 })

function get(port: number, path: string): Promise<{ status: number; body: string; next: string | null }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: HOST, port, path, agent, headers: { cookie: `session_id=${SESSION}` } },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link ?? ''))?.[1] ?? null
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), next })
        })
      },
    )
    req.on('error', reject)
    req.end()
  })
}

type ListedFolder = Record<string, unknown> & { id: string }

/**
 * Every folder through the listings, breadth first: the root's pages, then those of each
 * folder listed (`parents`: of only these, the walk's lower bound); `seen` is given each one.
 */
async function walk(
  port: number,
  limit: number,
  parents: string[] | null,
  seen: (folder: ListedFolder) => void = () => undefined,
): Promise<{ folders: number; requests: number }> {
  let folders = 0
  let requests = 0
  const queue: (string | null)[] = [null, ...(parents ?? [])]
  for (let next = 0; next < queue.length; next++) {
    const parent = queue[next] as string | null
    let path: string | null = `/v1/folders?limit=${limit}${parent === null ? '' : `&folder_id=${parent}`}`
    while (path !== null) {
      const answer = await get(port, path)
      if (answer.status !== 200) throw new Error(`${path}: ${answer.status}`)
      requests++
      const page = (JSON.parse(answer.body) as { folders: ListedFolder[] }).folders
      folders += page.length
      for (const folder of page) seen(folder)
      if (parents === null) for (const folder of page) queue.push(folder.id)
      path = answer.next
    }
  }
  return { folders, requests }
}

async function download(port: number, limit: number): Promise<{ folders: number; requests: number }> {
  let folders = 0
  let requests = 0
  let cursor: string | null = null
  for (;;) {
    const path: string = `/v1/folders/tree?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}`
    const answer = await get(port, path)
    if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.body}`)
    requests++
    const body = JSON.parse(answer.body) as { changes: { type: string }[]; cursor: string; has_more: boolean }
    folders += body.changes.filter((entry) => entry.type === 'upsert').length
    cursor = body.cursor
    if (!body.has_more) return { folders, requests }
  }
}

interface Run {
  seconds: number
  folders: number
  requests: number
  serviceCpuSeconds: number
  generatorCpuSeconds: number
}

async function timed(pid: number, run: () => Promise<{ folders: number; requests: number }>): Promise<Run> {
  const serviceCpu = readCpuSeconds(pid) ?? Number.NaN
  const generatorCpu = process.cpuUsage()
  const started = performance.now()
  const { folders, requests } = await run()
  const seconds = (performance.now() - started) / 1000
  const generator = process.cpuUsage(generatorCpu)
  return {
    seconds,
    folders,
    requests,
    serviceCpuSeconds: (readCpuSeconds(pid) ?? Number.NaN) - serviceCpu,
    generatorCpuSeconds: (generator.user + generator.system) / 1e6,
  }
}

export interface TreeFigures {
  backend: string
  walks: Run[]
  /** walks that list only the folders known to hold children */
  knowingWalks: Run[]
  downloads: Run[]
  /** the service's resident memory after each download, MB */
  rssMb: number[]
  follow: FollowFigures
}

async function measure(
  backend: string,
  url: string,
  data: ReturnType<typeof writeDataFile>,
  followSeconds: number,
): Promise<TreeFigures> {
  await importData({ root, url, file: data.file, folders: data.folders, timeoutSeconds: 900, log })
  const port = await freePort()
  const service = await startService({
    root,
    url,
    port,
    env: { ...process.env, ...SERVICE_ENV, LISTING_CACHE_MB: '0' },
  })
  const pid = service.pid
  try {
    // Warm-up: compile the statements, fill the database's page cache.
    await walk(port, 10, data.parents.slice(0, 10))
    await download(port, 10).catch(() => undefined)
    const walks: Run[] = []
    const knowingWalks: Run[] = []
    const downloads: Run[] = []
    const rssMb: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      walks.push(await timed(pid, () => walk(port, 100, null)))
      knowingWalks.push(await timed(pid, () => walk(port, 100, data.parents)))
      downloads.push(await timed(pid, () => download(port, 1000)))
      rssMb.push((readRss(pid) ?? Number.NaN) / 2 ** 20)
    }
    const follow = await followUnderWrites({
      root,
      tmp: dirname(data.file),
      db: url,
      port,
      ownerId: USER,
      sessionId: SESSION,
      parents: data.parents.map((id, p) => ({ id, childIds: data.children[p] ?? [] })),
      rate: WRITE_RATE,
      seconds: followSeconds,
      listed: async () => {
        const folders = new Map<string, ListedFolder>()
        await walk(port, 100, null, (folder) => folders.set(folder.id, folder))
        return folders
      },
    })
    return { backend, walks, knowingWalks, downloads, rssMb, follow }
  } finally {
    agent.destroy()
    await stopChild(service)
  }
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

function report(f: TreeFigures): void {
  log(`== ${f.backend}`)
  const line = (name: string, runs: Run[]) => {
    for (const r of runs)
      log(
        `  ${name}: ${r.folders} folders in ${r.requests} requests, ${r.seconds.toFixed(2)} s (service ${r.serviceCpuSeconds.toFixed(2)} CPU s, load generator ${r.generatorCpuSeconds.toFixed(2)} CPU s)`,
      )
  }
  line('walk          ', f.walks)
  line('knowing walk  ', f.knowingWalks)
  line('download      ', f.downloads)
  const walkP50 = median(f.walks.map((r) => r.seconds))
  const knowingP50 = median(f.knowingWalks.map((r) => r.seconds))
  const downloadP50 = median(f.downloads.map((r) => r.seconds))
  log(
    `  p50: walk ${walkP50.toFixed(2)} s, knowing walk ${knowingP50.toFixed(2)} s, download ${downloadP50.toFixed(2)} s`,
  )
  log(
    `  walk / download ${(walkP50 / downloadP50).toFixed(2)} (target >= 5), knowing walk / download ${(knowingP50 / downloadP50).toFixed(2)}`,
  )
  log(`  service memory after each download: ${f.rssMb.map((mb) => `${mb.toFixed(0)} MB`).join(', ')}`)
  const { writer, ...follow } = f.follow
  log(
    `  follow under writes: ${writer.writes} writes in ${writer.seconds.toFixed(1)} s (${writer.writesPerSecond.toFixed(1)}/s; ${writer.byKind.insert} inserts, ${writer.byKind.rename} renames, ${writer.byKind.delete} deletes; ${writer.writeErrors} errors, ${writer.stale} stale listings)`,
  )
  log(
    `  follower: ${follow.batches} batches (${follow.downloadBatches} of the download); at the present ${follow.catchUpMs.toFixed(0)} ms after the writer's exit, ${follow.lastWriteMs.toFixed(0)} ms after the last write's commit`,
  )
  log(
    `  tree: ${follow.folders} folders by the listings, ${follow.followerFolders} held by the follower; mismatches ${follow.mismatchCount} (target 0)`,
  )
  for (const mismatch of follow.mismatches) log(`    mismatch ${mismatch}`)
}

async function main(): Promise<void> {
  await runBenchCommand({ 'follow-seconds': '20' }, async ({ huge, backend, postgresUrl, numbers }) => {
    const figures = await onEachBackend({
      name: 'tree',
      backend,
      postgresUrl,
      users: [USER],
      prepare: (tmp) => writeDataFile(join(tmp, 'tree.json'), huge),
      measure: (label, url, data) => measure(label, url, data, numbers['follow-seconds'] ?? 20),
      report,
      log,
    })
    if (figures.some((f) => f.follow.mismatchCount > 0 || f.follow.writer.writeErrors > 0)) {
      log("FAILED: the follower's tree differs from the listings, or the writer failed")
      process.exitCode = 1
    }
  })
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main()
