import { fork } from 'node:child_process'
import { createServer, type ServerResponse } from 'node:http'
import { connect, type Socket } from 'node:net'
import { writeHeapSnapshot } from 'node:v8'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureBuilt } from '../harness/build.js'
import type * as AppModule from '../src/app.js'
import type * as ConfigModule from '../src/config.js'
import type * as OpenStoreModule from '../src/store/open-store.js'
import type * as ValidateModule from '../src/import/validate-import.js'

/**
 * The memory of idle followers in one process: bytes per event stream and per held
 * long-poll request of the changes feed, next to a bare node:http server holding as many
 * idle responses (Node's own floor). The service runs in this process (run with
 * --expose-gc); the followers are raw sockets in a child process, so their memory is not
 * counted. Figures are after a full collection: heap used + external (what a follower
 * retains), and RSS. The service is the built one (dist/, rebuilt when stale), as bench:feed
 * and users run it: under tsx every function gets a `name` property of its own, about 3 KB
 * more per stream.
 *
 *   npm run bench:followers -- [counts...]   (default 1000 5000)
 */

const OWNER = '0f000000-0000-4000-8000-000000000001'
const SESSION = '0f000000-0000-4000-8000-000000000002'
const FOLDER = '0f000000-0000-4000-8000-000000000003'

type Kind = 'sse' | 'held' | 'floor'

const REQUESTS: Record<Kind, string> = {
  sse: `GET /v1/folders/changes?folder_id=${FOLDER} HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\ncookie: session_id=${SESSION}\r\n\r\n`,
  held: `GET /v1/folders/changes?folder_id=${FOLDER}&cursor=CURSOR&wait=60 HTTP/1.1\r\nhost: x\r\ncookie: session_id=${SESSION}\r\n\r\n`,
  floor: `GET / HTTP/1.1\r\nhost: x\r\n\r\n`,
}

if (process.argv[2] === '--followers') {
  // The child: opens sockets as told and holds them, discarding what arrives.
  const sockets: Socket[] = []
  let answered = 0
  process.on('message', (message: { port: number; count: number; request: string } | 'answered') => {
    if (message === 'answered') return void process.send?.(answered)
    let connected = 0
    const { port, count, request } = message
    const open = (i: number) => {
      if (i >= count) return
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(request)
        if (++connected === count) process.send?.('open')
      })
      let heard = false
      socket.on('data', () => {
        if (!heard) answered++
        heard = true
      })
      socket.on('error', () => undefined)
      sockets.push(socket)
      // paced, so that the accept queue does not overflow
      if (i % 200 === 199) setTimeout(() => open(i + 1), 50)
      else open(i + 1)
    }
    if (count === 0) process.send?.('open')
    else open(0)
  })
} else {
  await main()
}

function settle(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

function retained() {
  for (let i = 0; i < 3; i++) global.gc?.()
  const { heapUsed, external, rss } = process.memoryUsage()
  return { kept: heapUsed + external, rss }
}

async function measure(port: number, kind: Kind, count: number, request: string) {
  const child = fork(new URL(import.meta.url).pathname, ['--followers'], { execArgv: ['--import', 'tsx'] })
  await settle(200)
  const before = retained()
  const opened = new Promise((resolve) => child.once('message', resolve))
  child.send({ port, count, request })
  await opened
  await settle(3000)
  const after = retained()
  // A held request that was answered (a refusal, say) would not be held: count them.
  const heard = new Promise((resolve) => child.once('message', resolve))
  child.send('answered')
  const answered = await heard
  if (process.env.SNAPSHOT_DIR) writeHeapSnapshot(`${process.env.SNAPSHOT_DIR}/${kind}-${count}.heapsnapshot`)
  child.kill()
  await new Promise((resolve) => child.once('exit', resolve))
  await settle(1000)
  const perKept = count === 0 ? 0 : (after.kept - before.kept) / count
  const perRss = count === 0 ? 0 : (after.rss - before.rss) / count
  console.log(
    `${kind.padEnd(5)} ${String(count).padStart(6)}: heap+external ${(perKept / 1024).toFixed(1)} KB each, RSS ${(perRss / 1024).toFixed(1)} KB each; ${String(answered)} answered`,
  )
}

async function main() {
  if (global.gc === undefined) throw new Error('run with --expose-gc')
  const counts = process.argv.slice(2).map(Number)
  if (counts.length === 0) counts.push(1000, 5000)
  const held: ServerResponse[] = []
  const floor = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' })
    response.write('\n')
    held.push(response)
  })
  await new Promise<void>((resolve) => floor.listen(0, '127.0.0.1', resolve))
  const floorPort = (floor.address() as { port: number }).port
  for (const count of counts) await measure(floorPort, 'floor', count, REQUESTS.floor)
  held.length = 0
  floor.closeAllConnections()
  floor.close()

  const root = fileURLToPath(new URL('..', import.meta.url))
  console.log(`dist/: ${ensureBuilt(root, true).action}`)
  const dist = (path: string) => import(join(root, 'dist', path))
  const { buildApp } = (await dist('app.js')) as typeof AppModule
  const { DEFAULTS } = (await dist('config.js')) as typeof ConfigModule
  const { openStore } = (await dist('store/open-store.js')) as typeof OpenStoreModule
  const { validateImport } = (await dist('import/validate-import.js')) as typeof ValidateModule
  const dir = mkdtempSync(join(tmpdir(), 'folder-service-follower-memory-'))
  const store = await openStore({ ...DEFAULTS, databaseUrl: `sqlite:${join(dir, 'bench.db')}` })
  await store.importData(
    validateImport(
      {
        users: [{ id: OWNER, username: 'follower' }],
        sessions: [{ id: SESSION, user_id: OWNER }],
        folders: [{ id: FOLDER, name: 'followed', owner_id: OWNER }],
      },
      Date.now(),
    ),
  )
  const most = Math.max(...counts)
  // The service's defaults, silent and without rate limits (the followers share one address).
  const config = {
    ...DEFAULTS,
    logLevel: 'silent' as const,
    rateLimitPerMinute: 0,
    authFailuresPerMinute: 0,
    maxConnections: 4 * most + 100,
    longPollMaxWaiters: most + 10,
    longPollMaxPerSession: most + 10,
  }
  const app = await buildApp({ store, config, logger: false })
  await app.ready()
  const address = await app.listen({ host: '127.0.0.1', port: 0 })
  const port = Number(new URL(address).port)
  const present = await app.inject({
    url: `/v1/folders/changes?folder_id=${FOLDER}`,
    headers: { cookie: `session_id=${SESSION}` },
  })
  const { cursor } = present.json<{ cursor: string }>()
  for (const count of counts) await measure(port, 'sse', count, REQUESTS.sse)
  for (const count of counts) await measure(port, 'held', count, REQUESTS.held.replace('CURSOR', cursor))
  await app.close()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
}
