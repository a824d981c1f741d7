import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../../src/config.js'
import { listen } from '../../src/process/server.js'
import http from 'node:http'
import { ROOT_FOLDERS, openSeeded, type Seeded } from '../helpers/apps/operability-db.js'
import { ALICE_SESSION, BOB_SESSION } from '../helpers/fixtures/users.js'

/**
 * Connections that never send a byte are closed at the headers timeout (Node's own timeout
 * starts with the first byte, so they stayed open for ever: 20,000 of them exhausted the
 * process's file handles), and MAX_CONNECTIONS bounds how many are open at once: past it a
 * new connection is closed at once, while the clients already connected are still served.
 */

/** A TCP connection that sends nothing; `closed` resolves with the ms it stayed open. */
function silentConnection(port: number): Promise<{ socket: net.Socket; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    const opened = Date.now()
    const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now() - opened)))
    socket.on('error', () => undefined)
    socket.once('connect', () => resolve({ socket, closed }))
    socket.once('error', reject)
  })
}

/** Sends one GET on `socket` (kept alive) and resolves with the status line. */
function getOn(socket: net.Socket, path: string): Promise<string> {
  return new Promise((resolve) => {
    let data = ''
    const onData = (chunk: Buffer) => {
      data += chunk.toString('latin1')
      const end = data.indexOf('\r\n\r\n')
      const length = /content-length: (\d+)/i.exec(data)
      if (end >= 0 && length && data.length >= end + 4 + Number(length[1])) {
        socket.off('data', onData)
        resolve(data.slice(0, data.indexOf('\r\n')))
      }
    }
    socket.on('data', onData)
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nCookie: session_id=${ALICE_SESSION}\r\n\r\n`)
  })
}

/** One GET on a connection of its own, closed after the answer: its status and body. */
function getAlone(port: number, path: string, session: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        headers: { cookie: `session_id=${session}`, connection: 'close' },
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (body += chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      },
    )
    req.on('error', reject)
  })
}

const within = <T>(promise: Promise<T>, ms: number, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms),
    ),
  ])

describe('connection limits, on a listening server', () => {
  let seeded: Seeded
  before(async () => {
    seeded = await openSeeded()
  })
  after(() => seeded.cleanup())

  async function serve(
    env: Record<string, string>,
    logger: { level: string; stream: { write(line: string): void } } | false = false,
  ): Promise<{ app: FastifyInstance; port: number }> {
    const config = { ...loadConfig(env), port: 0, rateLimitPerMinute: 0, logLevel: 'silent' }
    const store = Object.assign(Object.create(seeded.store) as typeof seeded.store, {
      close: () => Promise.resolve(),
    })
    const app = await listen(config, { store, logger })
    return { app, port: (app.server.address() as net.AddressInfo).port }
  }

  it('closes connections that send nothing at the headers timeout', async () => {
    const { app, port } = await serve({ REQUEST_TIMEOUT_MS: '2000', HEADERS_TIMEOUT_MS: '500' })
    const silent = await Promise.all(Array.from({ length: 20 }, () => silentConnection(port)))
    try {
      const lifetimes = await within(
        Promise.all(silent.map((s) => s.closed)),
        5000,
        'silent connections closed',
      )
      for (const ms of lifetimes)
        assert.ok(ms >= 400, `closed after ${ms} ms, not before the headers timeout`)
    } finally {
      for (const { socket } of silent) socket.destroy()
      await app.close()
    }
  })

  it('closes new connections past MAX_CONNECTIONS at once and keeps serving the open ones', async () => {
    const log: string[] = []
    const logger = { level: 'warn', stream: { write: (line: string) => void log.push(line) } }
    const { app, port } = await serve(
      {
        MAX_CONNECTIONS: '5',
        REQUEST_TIMEOUT_MS: '60000',
        HEADERS_TIMEOUT_MS: '30000',
      },
      logger,
    )
    const sockets: net.Socket[] = []
    try {
      const client = await silentConnection(port)
      sockets.push(client.socket)
      assert.match(await getOn(client.socket, '/v1/folders?limit=1'), /^HTTP\/1\.1 200/)
      for (let i = 0; i < 4; i++) sockets.push((await silentConnection(port)).socket)
      // The sixth: accepted by the kernel, closed by the service without an answer.
      const extra = await silentConnection(port)
      sockets.push(extra.socket)
      await within(extra.closed, 2000, 'the connection past the bound is closed')
      const warned = log.map((line) => JSON.parse(line) as Record<string, unknown>)
      assert.deepEqual(
        warned.map(({ msg, dropped, max_connections }) => ({ msg, dropped, max_connections })),
        [{ msg: 'connections closed: MAX_CONNECTIONS open', dropped: 1, max_connections: 5 }],
      )
      // The client connected before keeps being answered on its connection.
      assert.match(await getOn(client.socket, '/v1/folders?limit=1'), /^HTTP\/1\.1 200/)
      assert.equal(app.server.listening, true)
      // Room again once connections go.
      for (const socket of sockets.slice(1, 5)) socket.destroy()
      await new Promise((resolve) => setTimeout(resolve, 100))
      const later = await silentConnection(port)
      sockets.push(later.socket)
      const status = await within(
        getOn(later.socket, `/v1/folders?limit=${ROOT_FOLDERS}`),
        2000,
        'a new client served',
      )
      assert.match(status, /^HTTP\/1\.1 200/)
    } finally {
      for (const socket of sockets) socket.destroy()
      await app.close()
    }
  })

  it('one session holding changes requests cannot take the connections others need', async () => {
    // MAX_CONNECTIONS 20: a quarter (5) may be held by the process, 4 by one session.
    const { app, port } = await serve({ MAX_CONNECTIONS: '20' })
    const held: Promise<{ status: number; body: string }>[] = []
    try {
      const fresh = await getAlone(port, '/v1/folders/changes', ALICE_SESSION)
      const { cursor } = JSON.parse(fresh.body) as { cursor: string }
      for (let i = 0; i < 20; i++) {
        held.push(getAlone(port, `/v1/folders/changes?cursor=${cursor}&wait=20`, ALICE_SESSION))
      }
      const refused = await within(
        Promise.all(held.slice(4)),
        5000,
        'the requests past the session bound answered at once',
      )
      assert.deepEqual(new Set(refused.map((r) => r.status)), new Set([429]))
      assert.equal((await within(getAlone(port, '/healthz', BOB_SESSION), 2000, '/healthz')).status, 200)
      const listing = await within(getAlone(port, '/v1/folders', BOB_SESSION), 2000, "another user's listing")
      assert.equal(listing.status, 200)
      const fresh2 = await getAlone(port, '/v1/folders/changes', BOB_SESSION)
      const bobCursor = (JSON.parse(fresh2.body) as { cursor: string }).cursor
      const bobHeld = getAlone(port, `/v1/folders/changes?cursor=${bobCursor}&wait=1`, BOB_SESSION)
      assert.equal((await within(bobHeld, 3000, "another user's held request")).status, 200)
    } finally {
      await app.close()
      await Promise.allSettled(held)
    }
  })
})
