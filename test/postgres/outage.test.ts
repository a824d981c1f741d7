import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, describe, it } from 'node:test'
import type pg from 'pg'
import { validateImport } from '../../src/import/validate-import.js'
import { openStore } from '../../src/store/open-store.js'
import { CLIENT_TIMEOUT_GRACE_MS } from '../../src/store/postgres/postgres-connections.js'
import { createPostgresStore, openPostgresStore } from '../../src/store/postgres/postgres-store.js'
import { StoreUnavailableError, type ListFoldersQuery, type Store } from '../../src/store/store.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { freshPostgresDatabase, withAdminClient } from '../helpers/databases/postgres.js'

/**
 * The PostgreSQL adapter under outages: every connection-level failure is a
 * StoreUnavailableError (HTTP 503) with its cause, arrives within the configured timeout
 * instead of hanging, never crashes the process, and the pool heals once the server is
 * back. The fake-server cases need no PostgreSQL and always run; the termination cases
 * need a real server (TEST_DATABASE_URL).
 */

const OWNER = '0b0e0000-0000-4000-8000-000000000001'
const FOLDER = '0b0e0000-0000-4000-8000-0000000000f1'
const ROOT: ListFoldersQuery = { ownerId: OWNER, parentId: null, page: 1, limit: 50 }
/** In every URL given to a store, so the tests can check no message ever shows it. */
const PASSWORD = 'not-in-any-message'

interface FakeServer {
  port: number
  /** connections accepted so far */
  accepted(): number
  close(): Promise<void>
}

/** A TCP server on 127.0.0.1 that runs `onSocket` for every connection it accepts. */
async function fakeServer(onSocket: (socket: net.Socket) => void): Promise<FakeServer> {
  const sockets = new Set<net.Socket>()
  let accepted = 0
  const server = net.createServer((socket) => {
    accepted++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    onSocket(socket)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  return {
    port,
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

/**
 * Completes the PostgreSQL startup (AuthenticationOk, ReadyForQuery) and then never answers:
 * a server that hangs after connections are up (frozen host, network partition).
 */
function answerStartupThenHang(socket: net.Socket): void {
  socket.once('data', () => {
    const authenticationOk = Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0])
    const readyForQuery = Buffer.from([0x5a, 0, 0, 0, 5, 0x49])
    socket.write(Buffer.concat([authenticationOk, readyForQuery]))
  })
}

/** One backend message: type byte, Int32 length (itself included), body. */
function message(type: string, body: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeInt32BE(body.length + 4)
  return Buffer.concat([Buffer.from(type), length, body])
}

const cstrings = (...parts: string[]) => Buffer.from(parts.map((part) => `${part}\0`).join(''))

/** What PostgreSQL sends a connection it terminates (pg_terminate_backend, shutdown). */
const TERMINATED = message(
  'E',
  Buffer.concat([
    cstrings('SFATAL', 'VFATAL', 'C57P01', 'Mterminating connection due to administrator command'),
    Buffer.from([0]),
  ]),
)

/**
 * The first connection is found dead by its first statement, as a pooled connection is
 * after a server restart; later connections answer a simple query (ping) normally.
 */
function firstConnectionDies(): (socket: net.Socket) => void {
  let connections = 0
  return (socket) => {
    const first = ++connections === 1
    answerStartupThenHang(socket)
    socket.once('data', () => {
      socket.on('data', () => {
        if (first) socket.end(TERMINATED)
        else socket.write(Buffer.concat([message('C', cstrings('SELECT 0')), message('Z', Buffer.from('I'))]))
      })
    })
  }
}

/** A port on which nothing listens (just released by the system). */
async function closedPort(): Promise<number> {
  const server = await fakeServer(() => {})
  await server.close()
  return server.port
}

function urlFor(port: number): string {
  return `postgres://app:${PASSWORD}@127.0.0.1:${port}/folder_service`
}

/** How a call ended and how long it took. */
async function timed(call: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const start = performance.now()
  try {
    await call
    return { error: undefined, ms: performance.now() - start }
  } catch (error) {
    return { error, ms: performance.now() - start }
  }
}

/** The call failed with a one-line StoreUnavailableError carrying its cause and no password. */
function assertUnavailable(error: unknown, message?: RegExp): asserts error is StoreUnavailableError {
  assert.ok(error instanceof StoreUnavailableError, `expected StoreUnavailableError, got ${String(error)}`)
  assert.notEqual(error.cause, undefined, 'the driver error is kept as cause')
  assert.ok(!error.message.includes('\n'), 'one line')
  assert.ok(!error.message.includes(PASSWORD), `no password in: ${error.message}`)
  if (message !== undefined) assert.match(error.message, message)
}

describe('postgres outage: a server that accepts and never answers', () => {
  const settings = { poolSize: 2, connectTimeoutMs: 500, statementTimeoutMs: 400 }
  let server: FakeServer
  before(async () => {
    server = await fakeServer(() => {})
  })
  after(() => server.close())

  it('fails listFolders and ping within the connect timeout', async () => {
    const store = createPostgresStore(urlFor(server.port), settings)
    try {
      for (const call of [() => store.listFolders(ROOT), () => store.ping()]) {
        const { error, ms } = await timed(call())
        assertUnavailable(
          error,
          new RegExp(`^cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${server.port}: `),
        )
        assert.ok(ms >= settings.connectTimeoutMs - 50, `waited the timeout (${ms} ms)`)
        assert.ok(ms < settings.connectTimeoutMs + 400, `gave up in time, without retrying (${ms} ms)`)
      }
    } finally {
      await store.close()
    }
  })

  it('makes openPostgresStore and openStore fail with one line instead of hanging', async () => {
    for (const open of [
      () => openPostgresStore(urlFor(server.port), settings),
      () =>
        openStore({
          ...TEST_SETTINGS,
          databaseUrl: urlFor(server.port),
          dbConnectTimeoutMs: settings.connectTimeoutMs,
        }),
    ]) {
      const { error, ms } = await timed(open())
      assertUnavailable(
        error,
        new RegExp(`^cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${server.port}: `),
      )
      assert.ok(ms < settings.connectTimeoutMs + 400, `gave up in time, without retrying (${ms} ms)`)
    }
  })
})

describe('postgres outage: a server that stops answering once connected', () => {
  const settings = { poolSize: 1, connectTimeoutMs: 1000, statementTimeoutMs: 400 }
  const clientTimeout = settings.statementTimeoutMs + CLIENT_TIMEOUT_GRACE_MS
  let server: FakeServer
  before(async () => {
    server = await fakeServer(answerStartupThenHang)
  })
  after(() => server.close())

  it('fails each call after the client-side query timeout and discards the connection', async () => {
    const store = createPostgresStore(urlFor(server.port), settings)
    try {
      for (const [n, call] of [() => store.listFolders(ROOT), () => store.ping()].entries()) {
        const { error, ms } = await timed(call())
        assertUnavailable(error, /is unavailable: Query read timeout$/)
        assert.ok(ms >= clientTimeout - 50, `waited the timeout (${ms} ms)`)
        assert.ok(ms < clientTimeout + 400, `gave up in time, without retrying (${ms} ms)`)
        // A timed-out connection still owes an answer: reusing it would stall the next
        // call behind the lost one. Each call must have opened its own.
        assert.equal(server.accepted(), n + 1)
      }
    } finally {
      await store.close()
    }
  })
})

describe('postgres outage: a pooled connection found dead', () => {
  const settings = { poolSize: 1, connectTimeoutMs: 1000, statementTimeoutMs: 1000 }

  it('runs a read once more on a fresh connection, so the caller sees no error', async () => {
    const server = await fakeServer(firstConnectionDies())
    const store = createPostgresStore(urlFor(server.port), settings)
    try {
      await store.ping()
      assert.equal(server.accepted(), 2)
    } finally {
      await store.close()
      await server.close()
    }
  })

  it('never runs a write twice: it fails with StoreUnavailableError', async () => {
    const server = await fakeServer(firstConnectionDies())
    const store = createPostgresStore(urlFor(server.port), settings)
    try {
      const { error } = await timed(store.setUserFrozen(OWNER, true, Date.now()))
      assertUnavailable(error, /is unavailable: terminating connection due to administrator command$/)
      assert.equal((error.cause as { code?: string }).code, '57P01')
      assert.equal(server.accepted(), 1)
    } finally {
      await store.close()
      await server.close()
    }
  })
})

describe('postgres outage: nothing listens on the port', () => {
  const settings = { poolSize: 2, connectTimeoutMs: 5000, statementTimeoutMs: 5000 }

  it('fails every call at once, well before the timeouts', async () => {
    const port = await closedPort()
    const store = createPostgresStore(urlFor(port), settings)
    try {
      for (const call of [() => store.listFolders(ROOT), () => store.findSessionUser(OWNER, Date.now())]) {
        const { error, ms } = await timed(call())
        assertUnavailable(
          error,
          new RegExp(`^cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${port}: ECONNREFUSED$`),
        )
        assert.ok(ms < 1000, `failed fast (${ms} ms)`)
      }
    } finally {
      await store.close()
    }
  })

  it('makes openPostgresStore fail at once with host, port and reason', async () => {
    const port = await closedPort()
    const { error, ms } = await timed(openPostgresStore(urlFor(port), settings))
    assertUnavailable(error)
    assert.equal(error.message, `cannot connect to PostgreSQL at 127.0.0.1:${port}: ECONNREFUSED`)
    assert.ok(ms < 1000, `failed fast (${ms} ms)`)
  })
})

const skip = process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set'

describe('postgres outage: backends terminated on a real server', { skip }, () => {
  let db: Awaited<ReturnType<typeof freshPostgresDatabase>>
  let store: Store
  let url: string

  before(async () => {
    db = await freshPostgresDatabase(process.env.TEST_DATABASE_URL ?? '')
    ;({ store, url } = db)
    await store.importData(
      validateImport(
        {
          users: [{ id: OWNER, username: 'outage' }],
          folders: [{ id: FOLDER, name: 'Kept', owner_id: OWNER, folder_id: null }],
        },
        Date.now(),
      ),
    )
  })
  after(() => db.cleanup())

  /** Pids of the store's connections: every other backend of the test database. */
  function storeBackends(admin: pg.Client): Promise<number[]> {
    return admin
      .query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      )
      .then(({ rows }) => rows.map((row) => row.pid))
  }

  /** Terminates the backends and waits until each has exited (PostgreSQL 14+). */
  async function terminate(admin: pg.Client, pids: number[]): Promise<void> {
    const { rows } = await admin.query<{ done: boolean }>(
      'SELECT pg_terminate_backend(pid, 5000) AS done FROM unnest($1::int[]) AS pid',
      [pids],
    )
    assert.deepEqual(
      rows.map((row) => row.done),
      pids.map(() => true),
    )
  }

  /** Calls `call` until it succeeds (at most `attempts` times); every failure must be a 503. */
  async function failuresBeforeSuccess<T>(
    call: () => Promise<T>,
    attempts: number,
  ): Promise<{ failures: number; value: T }> {
    for (let failures = 0; failures < attempts; failures++) {
      try {
        return { failures, value: await call() }
      } catch (error) {
        assertUnavailable(error)
      }
    }
    assert.fail(`no success in ${attempts} attempts`)
  }

  it('answers reads again right after every pooled connection was terminated', async () => {
    const expected = await store.listFolders(ROOT)
    assert.equal(expected?.total, 1)
    // Fill the pool: concurrent calls each need a connection of their own.
    await Promise.all(Array.from({ length: TEST_SETTINGS.dbPoolSize }, () => store.listFolders(ROOT)))

    await withAdminClient(url, async (admin) => {
      const before = await storeBackends(admin)
      assert.equal(before.length, TEST_SETTINGS.dbPoolSize, 'the pool holds its connections')
      await terminate(admin, before)

      // A read on a connection found dead runs again on a fresh one: no failure expected,
      // but one StoreUnavailableError would still be within the contract.
      const { failures, value } = await failuresBeforeSuccess(() => store.listFolders(ROOT), 2)
      assert.ok(failures <= 1)
      assert.deepEqual(value, expected)
      for (let i = 0; i < 5; i++) assert.deepEqual(await store.listFolders(ROOT), expected)
      assert.equal((await store.findSessionUser(OWNER, Date.now())) === null, true)
      await store.ping()

      const after = await storeBackends(admin)
      assert.ok(after.length > 0)
      assert.ok(
        after.every((pid) => !before.includes(pid)),
        'served by new connections',
      )
    })
  })

  it('fails a write at most once after termination, then succeeds', async () => {
    await withAdminClient(url, async (admin) => {
      const pids = await storeBackends(admin)
      assert.ok(pids.length > 0, 'the pool holds connections')
      await terminate(admin, pids)
      const { failures, value } = await failuresBeforeSuccess(
        () => store.setUserFrozen(OWNER, false, Date.now()),
        2,
      )
      assert.ok(failures <= 1)
      assert.equal(value, true)
    })
  })

  it('turns a statement terminated while it runs into StoreUnavailableError, then recovers', async () => {
    await withAdminClient(url, async (admin) => {
      // Hold a lock the write waits for, so it is surely running when its backend is terminated.
      await admin.query('BEGIN')
      await admin.query('LOCK TABLE folders IN ACCESS EXCLUSIVE MODE')
      const write = timed(store.markFolderDeleted(FOLDER, Date.now()))
      const waiting = await waitFor(async () => {
        const { rows } = await admin.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
        )
        return rows[0]?.pid
      })
      await terminate(admin, [waiting])
      const { error } = await write
      assertUnavailable(error, /is unavailable: terminating connection due to administrator command$/)
      assert.equal((error.cause as { code?: string }).code, '57P01')
      await admin.query('ROLLBACK')
    })
    // The terminated write did not happen; the next one does.
    assert.equal((await store.findFolder(FOLDER))?.is_deleted, false)
    assert.equal(await store.markFolderDeleted(FOLDER, Date.now()), true)
  })

  it('reports a statement cancelled by statement_timeout as StoreUnavailableError', async () => {
    const statementTimeoutMs = 300
    const slow = await openPostgresStore(url, { poolSize: 1, connectTimeoutMs: 3000, statementTimeoutMs })
    try {
      const expected = await slow.listFolders(ROOT)
      await withAdminClient(url, async (admin) => {
        await admin.query('BEGIN')
        await admin.query('LOCK TABLE folders IN ACCESS EXCLUSIVE MODE')
        const { error, ms } = await timed(slow.listFolders(ROOT))
        await admin.query('ROLLBACK')
        assertUnavailable(error, /canceling statement due to statement timeout$/)
        // The server's timer fires before the client-side one (statement timeout + grace).
        assert.equal((error.cause as { code?: string }).code, '57014')
        assert.ok(
          ms >= statementTimeoutMs - 50 && ms < statementTimeoutMs + CLIENT_TIMEOUT_GRACE_MS,
          `${ms} ms`,
        )
      })
      assert.deepEqual(await slow.listFolders(ROOT), expected)
    } finally {
      await slow.close()
    }
  })
})

/** Polls `probe` every 20 ms until it returns a value (at most 5 s). */
async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 5000
  while (Date.now() < deadline) {
    const value = await probe()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.fail('timed out waiting')
}
