import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { StoreUnavailableError, type Store } from '../../src/store/store.js'
import { sessionCookieHeaders, openSeeded, type Seeded } from '../helpers/apps/operability-db.js'
import { ALICE_SESSION, FROZEN_SESSION, UNKNOWN_SESSION } from '../helpers/fixtures/users.js'
import { appOver } from '../helpers/apps/test-app.js'
import { failingStore } from '../helpers/apps/failing-store.js'

/** Log lines: one per request, tied to the X-Request-Id, never carrying the session. */

interface LogLine {
  level: number
  msg: string
  request_id?: string
  method?: string
  route?: string | null
  status?: number
  duration_ms?: number
}

/** A pino destination that keeps every line. */
function capture() {
  const chunks: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'))
      done()
    },
  })
  return {
    stream,
    text: () => chunks.join(''),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as LogLine),
  }
}

describe('logs', () => {
  let seeded: Seeded
  before(async () => {
    seeded = await openSeeded()
  })
  after(() => seeded.cleanup())

  async function withLoggedApp(
    level: string,
    work: (app: FastifyInstance, log: ReturnType<typeof capture>) => Promise<void>,
    store: Store = seeded.store,
    config = {},
  ) {
    const log = capture()
    const app = await appOver(store, { logLevel: level, ...config }, { level, stream: log.stream })
    try {
      await work(app, log)
    } finally {
      await app.close()
    }
  }

  it('writes one request line with method, route pattern, status, duration and the request id', async () => {
    await withLoggedApp('info', async (app, log) => {
      const res = await app.inject({
        url: '/v1/folders?limit=2',
        headers: sessionCookieHeaders(ALICE_SESSION),
      })
      assert.equal(res.statusCode, 200)
      const lines = log.lines().filter((l) => l.msg === 'request')
      assert.equal(lines.length, 1, log.text())
      const line = lines[0] as LogLine
      assert.equal(line.method, 'GET')
      assert.equal(line.route, '/v1/folders')
      assert.equal(line.status, 200)
      assert.equal(typeof line.duration_ms, 'number')
      assert.equal(line.request_id, res.headers['x-request-id'])
    })
  })

  it('uses one request id for the X-Request-Id header, the problem body and the log line', async () => {
    await withLoggedApp('info', async (app, log) => {
      const res = await app.inject({ url: '/v1/folders' })
      assert.equal(res.statusCode, 401)
      const id = res.headers['x-request-id']
      assert.match(String(id), /^[0-9a-f-]{36}$/)
      assert.equal(res.json<{ request_id: string }>().request_id, id)
      assert.deepEqual(
        log.lines().map((l) => l.request_id),
        [id],
      )
    })
  })

  it('keeps a well-formed incoming X-Request-Id and replaces a malformed one', async () => {
    await withLoggedApp('info', async (app, log) => {
      const incoming = 'lb-7f3a.2026:trace/01'
      const kept = await app.inject({ url: '/v1/folders', headers: { 'x-request-id': incoming } })
      assert.equal(kept.headers['x-request-id'], incoming)
      assert.equal(kept.json<{ request_id: string }>().request_id, incoming)
      const forged = 'bad id\r\nX-Evil: 1'
      const replaced = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'x'.repeat(129) } })
      assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/)
      const spaced = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'two words' } })
      assert.notEqual(spaced.headers['x-request-id'], 'two words')
      assert.deepEqual(
        log.lines().map((l) => l.request_id),
        [incoming, replaced.headers['x-request-id'], spaced.headers['x-request-id']],
      )
      assert.ok(!log.text().includes(forged))
    })
  })

  it('never writes the session id or the cookie, whatever the outcome, even at trace level', async () => {
    const secretCookie = `theme=dark; session_id=${ALICE_SESSION}; other=1`
    const unavailable: Store = Object.assign(Object.create(seeded.store) as Store, {
      listFolders: () => Promise.reject(new StoreUnavailableError('connection refused')),
    })
    const run = async (app: FastifyInstance) => {
      const statuses: number[] = []
      for (const [url, session] of [
        ['/v1/folders', ALICE_SESSION],
        ['/v1/folders?page=0', ALICE_SESSION],
        ['/v1/folders?folder_id=00000000-0000-4000-8000-000000000000', ALICE_SESSION],
        ['/v1/folders', UNKNOWN_SESSION],
        ['/v1/folders', FROZEN_SESSION],
        ['/v1/folders', `${ALICE_SESSION}-not-a-uuid`],
        ['/nowhere', ALICE_SESSION],
      ] as const) {
        const res = await app.inject({
          url,
          headers: { cookie: secretCookie.replace(ALICE_SESSION, session) },
        })
        statuses.push(res.statusCode)
      }
      const post = await app.inject({ method: 'POST', url: '/v1/folders', headers: { cookie: secretCookie } })
      statuses.push(post.statusCode)
      // Alice's fifth request to the API on a limit of 4 a minute.
      const limited = await app.inject({ url: '/v1/folders', headers: { cookie: secretCookie } })
      statuses.push(limited.statusCode)
      return statuses
    }
    const secrets = [ALICE_SESSION, UNKNOWN_SESSION, FROZEN_SESSION, 'session_id', 'theme=dark']

    await withLoggedApp(
      'trace',
      async (app, log) => {
        assert.deepEqual(await run(app), [200, 400, 404, 401, 403, 401, 404, 405, 429])
        const text = log.text()
        assert.ok(log.lines().length >= 9, text)
        for (const secret of secrets) assert.ok(!text.includes(secret), `log holds ${secret}:\n${text}`)
      },
      seeded.store,
      { rateLimitPerMinute: 4 },
    )
    for (const [store, status] of [
      [failingStore(seeded.store, ['findSessionUser']), 500],
      [unavailable, 503],
      [failingStore(seeded.store), 500],
    ] as const) {
      await withLoggedApp(
        'trace',
        async (app, log) => {
          const res = await app.inject({ url: '/v1/folders', headers: { cookie: secretCookie } })
          assert.equal(res.statusCode, status)
          const errors = log.lines().filter((l) => l.level >= 50)
          assert.ok(errors.length >= 1, `the ${status} is logged as an error`)
          const text = log.text()
          for (const secret of secrets) assert.ok(!text.includes(secret), `log holds ${secret}:\n${text}`)
        },
        store,
      )
    }
  })

  it('follows the configured level: warn drops request lines but keeps errors; silent writes nothing', async () => {
    await withLoggedApp('warn', async (app, log) => {
      assert.equal(
        (await app.inject({ url: '/v1/folders', headers: sessionCookieHeaders(ALICE_SESSION) })).statusCode,
        200,
      )
      assert.equal(log.text(), '')
    })
    await withLoggedApp(
      'warn',
      async (app, log) => {
        assert.equal(
          (await app.inject({ url: '/v1/folders', headers: sessionCookieHeaders(ALICE_SESSION) })).statusCode,
          500,
        )
        assert.ok(log.lines().length >= 1)
        assert.ok(log.lines().every((l) => l.level >= 40))
      },
      failingStore(seeded.store, ['findSessionUser']),
    )
    await withLoggedApp(
      'silent',
      async (app, log) => {
        assert.equal(
          (await app.inject({ url: '/v1/folders', headers: sessionCookieHeaders(ALICE_SESSION) })).statusCode,
          500,
        )
        assert.equal(log.text(), '')
      },
      failingStore(seeded.store, ['findSessionUser']),
    )
  })
})
