import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, describe, it } from 'node:test'
import { openStore } from '../../src/store/open-store.js'
import { StoreUnavailableError } from '../../src/store/store.js'
import { postgresBackend } from '../helpers/databases/backends.js'
import { faultData, ownPath, seed, type FaultData } from '../helpers/fixtures/fault-data.js'
import { Load, sleep, tally, type Outcome } from '../helpers/http/load.js'
import { createEmptyDatabase } from '../helpers/databases/postgres.js'
import { runCli, startService, type Service } from '../helpers/processes/cli.js'

/**
 * A database that accepts TCP connections and never answers (a frozen host, a partition):
 * nothing may hang. At start-up (openStore migrates at once) the failure is a
 * StoreUnavailableError, and `serve` exits non-zero with one line, within the connect
 * timeout. On the request path (a real PostgreSQL behind a TCP proxy that goes silent),
 * requests get 503 within the configured timeouts, and 200 again once it speaks again.
 */

const CONNECT_TIMEOUT_MS = 800
const STATEMENT_TIMEOUT_MS = 800
/** the client-side query timeout is the statement timeout plus 500 ms of grace (postgres-connections.ts) */
const CLIENT_GRACE_MS = 500
/** how long the proxy stays silent in the load test */
const SILENCE_MS = 6000
/** room for a loaded CI machine, on top of the configured timeouts */
const SLACK_MS = 2000

interface Silent {
  port: number
  accepted(): number
  close(): Promise<void>
}

/** Accepts connections and never writes a byte. */
async function silentServer(): Promise<Silent> {
  const sockets = new Set<net.Socket>()
  let accepted = 0
  const server = net.createServer((socket) => {
    accepted++
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

interface Proxy {
  port: number
  /** stop forwarding in both directions (connections stay open, bytes are dropped) */
  silence(): void
  resume(): void
  close(): Promise<void>
}

/** A TCP proxy to host:port that can go silent. */
async function proxyTo(host: string, port: number): Promise<Proxy> {
  let silent = false
  const sockets = new Set<net.Socket>()
  const track = (s: net.Socket) => {
    sockets.add(s)
    s.on('error', () => {})
    s.on('close', () => sockets.delete(s))
  }
  const server = net.createServer((client) => {
    track(client)
    const upstream = net.connect(port, host)
    track(upstream)
    client.on('data', (d: Buffer) => {
      if (!silent) upstream.write(d)
    })
    upstream.on('data', (d: Buffer) => {
      if (!silent) client.write(d)
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    silence: () => (silent = true),
    resume: () => (silent = false),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

describe('a database that accepts connections and never answers', () => {
  let silent: Silent
  before(async () => {
    silent = await silentServer()
  })
  after(async () => {
    await silent?.close()
  })

  it('fails openStore (which migrates) with StoreUnavailableError within the connect timeout', async () => {
    const started = Date.now()
    const error = await openStore({
      databaseUrl: `postgres://app:secret-password@127.0.0.1:${silent.port}/folder_service`,
      dbPoolSize: 2,
      dbConnectTimeoutMs: CONNECT_TIMEOUT_MS,
      dbStatementTimeoutMs: STATEMENT_TIMEOUT_MS,
      sqliteBusyTimeoutMs: 100,
    }).then(
      () => assert.fail('openStore succeeded against a silent server'),
      (e: unknown) => e,
    )
    const elapsed = Date.now() - started
    assert.ok(error instanceof StoreUnavailableError, `got ${String(error)}`)
    assert.doesNotMatch(error.message, /secret-password/)
    assert.ok(silent.accepted() >= 1, 'the store did connect to the silent server')
    assert.ok(elapsed >= CONNECT_TIMEOUT_MS - 50, `failed after ${elapsed} ms: too early to be the timeout`)
    assert.ok(
      elapsed < CONNECT_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + CLIENT_GRACE_MS + SLACK_MS,
      `took ${elapsed} ms`,
    )
  })

  it('makes `serve` exit non-zero with one line on stderr, within the timeout', async () => {
    const run = await runCli(
      [
        'serve',
        '--db',
        `postgres://app:secret-password@127.0.0.1:${silent.port}/folder_service`,
        '--port',
        '0',
      ],
      {
        env: {
          DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
          DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
        },
        timeoutMs: 20_000,
      },
    )
    const context = `exit ${run.code} signal ${run.signal} in ${run.ms} ms\nstdout: ${run.stdout}\nstderr: ${run.stderr}`
    assert.equal(run.signal, null, context)
    assert.notEqual(run.code, 0, context)
    const lines = run.stderr.split('\n').filter((l) => l.trim() !== '')
    assert.equal(lines.length, 1, context)
    assert.match(lines[0] as string, /PostgreSQL|connect|unavailable|timeout/i, context)
    assert.doesNotMatch(run.stderr, /secret-password|\n\s+at /, context)
    // Node's start-up is part of it; the bound is the timeouts plus generous slack.
    assert.ok(run.ms < CONNECT_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + CLIENT_GRACE_MS + SLACK_MS + 3000, context)
  })
})

function describeOutcome(o: Outcome): string {
  return `${o.path} -> ${o.status ?? ''} ${o.error ?? ''} in ${o.endedAt - o.startedAt} ms ${o.body.slice(0, 160)}`
}

describe('PostgreSQL going silent under load (through a TCP proxy)', { skip: postgresBackend.skip }, () => {
  let database: { url: string; drop(): Promise<void> } | undefined
  let proxy: Proxy | undefined
  let service: Service | undefined
  let data: FaultData

  before(async () => {
    database = await createEmptyDatabase(process.env.TEST_DATABASE_URL ?? '')
    data = faultData(2, 20)
    await seed(database.url, data)
    const real = new URL(database.url)
    proxy = await proxyTo(real.hostname, Number(real.port === '' ? 5432 : real.port))
    const proxied = new URL(database.url)
    proxied.hostname = '127.0.0.1'
    proxied.port = String(proxy.port)
    service = await startService(proxied.toString(), {
      DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
      DB_POOL_SIZE: '4',
    })
  })
  after(async () => {
    await service?.stop()
    await proxy?.close()
    await database?.drop()
  })

  it('answers 503 within the timeouts while silent, and 200 again once it speaks', async (t) => {
    const svc = service as Service
    const px = proxy as Proxy
    const load = new Load({
      base: svc.base,
      connections: 4,
      path: (w, n) => ownPath(data, w, n),
      cookie: (w) => `session_id=${data.sessions[w % data.sessions.length]}`,
      timeoutMs: 20_000,
      pauseMs: 5,
    }).start()
    await sleep(800)
    const silenced = Date.now()
    px.silence()
    // Long enough for each of the 4 connections to make whole requests inside the silence:
    // the ones in flight when it began end within the bound below (2.1 s), and the next
    // ones must start and end inside it, even on a loaded machine.
    await sleep(SILENCE_MS)
    const resumed = Date.now()
    px.resume()
    // Connections that went silent fail within the bound and are replaced; then 200 again.
    const bound = CONNECT_TIMEOUT_MS + STATEMENT_TIMEOUT_MS + CLIENT_GRACE_MS + SLACK_MS
    await sleep(bound + 1000)
    const outcomes = await load.stop()
    const summary = `outcomes ${JSON.stringify(tally(outcomes))}`
    t.diagnostic(summary)

    assert.ok(svc.running(), `the service exited\n${svc.stderr()}`)
    const broken = outcomes.filter((o) => o.error !== undefined || (o.status !== 200 && o.status !== 503))
    assert.deepEqual(broken.map(describeOutcome), [], summary)
    // A request may need a connection (connect timeout), then run a statement on it
    // (statement timeout + grace): the bound allows one of each.
    // Times are whole milliseconds: a request started in the millisecond of `silenced` may
    // have started (and been answered, in under a millisecond) before the proxy went silent,
    // and one ended in the millisecond of `resumed` may have ended after it spoke again.
    // Only requests strictly inside the silence count.
    const during = outcomes.filter((o) => o.startedAt > silenced && o.endedAt < resumed)
    assert.ok(during.length >= 3, `requests answered while silent: ${during.length}\n${summary}`)
    for (const o of during) {
      assert.equal(o.status, 503, describeOutcome(o))
      assert.match(String(o.headers['retry-after']), /^[1-9][0-9]*$/, describeOutcome(o))
    }
    const slow = outcomes.filter((o) => o.endedAt - o.startedAt > bound)
    assert.deepEqual(slow.map(describeOutcome), [], `every request ends within ${bound} ms\n${summary}`)
    // Back: the pool replaced the connections that went silent.
    const settled = outcomes.filter((o) => o.startedAt > resumed + bound)
    assert.ok(settled.length > 5, summary)
    assert.deepEqual(
      settled.filter((o) => o.status !== 200).map(describeOutcome),
      [],
      `once it speaks again every answer is 200\n${summary}`,
    )
  })
})
