import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { listen } from '../../src/process/server.js'
import type { ListFoldersQuery, Store } from '../../src/store/store.js'
import { ensureBuilt, startCli, within } from '../helpers/processes/cli.js'
import { ROOT_FOLDERS, openSeeded, type Seeded } from '../helpers/apps/operability-db.js'
import { ALICE_SESSION } from '../helpers/fixtures/users.js'

/** Graceful shutdown: requests in flight finish, the database closes, the process exits 0. */

/** GET on a fresh connection (no keep-alive pool), resolving with the status or the error code. */
function freshConnection(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'))
    req.end()
  })
}

describe('graceful shutdown, in process', () => {
  let seeded: Seeded
  before(async () => {
    seeded = await openSeeded()
  })
  after(() => seeded.cleanup())

  it('lets every request in flight finish with 200, then closes the store, promptly', async () => {
    const IN_FLIGHT = 5
    let entered = 0
    let allEntered: () => void = () => {}
    const everyoneIn = new Promise<void>((resolve) => (allEntered = resolve))
    let closed = false
    const slow: Store = Object.assign(Object.create(seeded.store) as Store, {
      async listFolders(query: ListFoldersQuery) {
        if (++entered === IN_FLIGHT) allEntered()
        await new Promise((resolve) => setTimeout(resolve, 300))
        return seeded.store.listFolders(query)
      },
      close() {
        closed = true
        return Promise.resolve()
      },
    })
    const config = { ...loadConfig({}), port: 0, rateLimitPerMinute: 0, logLevel: 'silent' }
    const app = await listen(config, { store: slow, logger: false })
    const { port } = app.server.address() as { port: number }
    const base = `http://127.0.0.1:${port}`

    const responses = Array.from({ length: IN_FLIGHT }, () =>
      fetch(`${base}/v1/folders`, { headers: { cookie: `session_id=${ALICE_SESSION}` } }).then(
        async (res) => ({
          status: res.status,
          connection: res.headers.get('connection'),
          total: ((await res.json()) as { total: number }).total,
        }),
      ),
    )
    await within(everyoneIn, 5000, 'all requests reaching the store')

    const started = performance.now()
    const stopping = app.close()
    // refused, or reset if the kernel had queued it before the listening socket closed
    const late = await freshConnection(`${base}/healthz`)
    assert.ok(late === 'ECONNREFUSED' || late === 'ECONNRESET', `a new connection once stopping: ${late}`)
    const results = await Promise.all(responses)
    await within(stopping, 5000, 'app.close()')
    const took = performance.now() - started

    assert.deepEqual(
      results,
      Array.from({ length: IN_FLIGHT }, () => ({ status: 200, connection: 'close', total: ROOT_FOLDERS })),
    )
    assert.ok(took < 2000, `stopped in ${Math.round(took)} ms (keep-alive connections must not hold it)`)
    assert.equal(closed, true, 'the store is closed')
  })
})

describe('graceful shutdown of `folder-service serve`', () => {
  let dir: string
  before(() => {
    ensureBuilt()
    dir = mkdtempSync(join(tmpdir(), 'folder-service-ops-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  // Requests in flight at shutdown are proven in process (above): a child cannot be slowed down.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`exits 0 promptly on ${signal}, after closing the database`, async () => {
      const db = join(dir, `${signal}.db`)
      const server = startCli(['serve', '--port', '0', '--db', `sqlite:${db}`])
      try {
        const line = await server.waitForLine(/listening at http:\/\/127\.0\.0\.1:\d+/)
        const base = /(http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1] as string
        assert.equal((await fetch(`${base}/healthz`)).status, 200)
        assert.ok(existsSync(`${db}-wal`), 'the database is open in WAL mode')

        const sent = performance.now()
        server.child.kill(signal)
        const ended = await within(server.exited, 10_000, `exit after ${signal}`)
        const took = performance.now() - sent

        assert.deepEqual(ended, { code: 0, signal: null }, `stderr: ${server.stderr()}`)
        assert.ok(took < 5000, `exited ${Math.round(took)} ms after ${signal}`)
        assert.match(server.stdout(), new RegExp(`"signal":"${signal}".*shutting down`))
        assert.match(server.stdout(), /"msg":"stopped"/)
        assert.equal(existsSync(`${db}-wal`), false, 'a cleanly closed SQLite database leaves no WAL file')
        assert.equal(server.stderr(), '')
      } finally {
        server.kill()
      }
    })
  }

  it('still exits 0 on SIGTERM when whoever read its log output has gone', async () => {
    const server = startCli(['serve', '--port', '0', '--db', `sqlite:${join(dir, 'pipe.db')}`], { cwd: dir })
    try {
      await server.waitForLine(/./, 15_000)
      server.child.stdout?.destroy()
      server.child.kill('SIGTERM')
      const ended = await within(server.exited, 10_000, 'exit after SIGTERM with a broken stdout')
      assert.deepEqual(ended, { code: 0, signal: null })
    } finally {
      server.kill()
    }
  })
})
