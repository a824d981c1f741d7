import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends, sqliteBackend } from '../helpers/databases/backends.js'
import { assertOneLineError } from '../helpers/processes/cli-asserts.js'
import { openCliDatabase, type CliDatabase } from '../helpers/processes/cli-database.js'
import {
  runCli,
  startCli,
  startCliOnTerminal,
  within,
  type CliOptions,
  type ServeProcess,
} from '../helpers/processes/cli.js'

/** `folder-service serve` as a process: start-up line, readiness, graceful stop, bad settings. */

const USER = '5e000000-0000-4000-8000-000000000001'
const SESSION = '5e000000-0000-4000-8000-00000000000a'

const LISTENING = /listening at (http:\/\/127\.0\.0\.1:(\d+))/i

async function seed(db: CliDatabase): Promise<void> {
  await db.store.importData(
    validateImport(
      {
        users: [{ id: USER, username: 'sam' }],
        sessions: [{ id: SESSION, user_id: USER }],
        folders: [{ name: 'Served', owner_id: USER }],
      },
      Date.now(),
    ),
  )
}

/** Starts `serve` on a free port and waits for its address line. */
async function serve(
  url: string,
  extra: string[] = [],
): Promise<{ server: ServeProcess; base: string; port: string }> {
  const server = startCli(['serve', '--db', url, '--host', '127.0.0.1', '--port', '0', ...extra])
  try {
    const line = await server.waitForLine(LISTENING)
    const [, base, port] = LISTENING.exec(line) as RegExpExecArray
    return { server, base: base as string, port: port as string }
  } catch (error) {
    server.kill()
    throw error
  }
}

// The backends run side by side (each has its own database): the suite is mostly process starts.
describe('folder-service serve', { concurrency: true }, () => {
  for (const backend of allBackends()) {
    describe(backend.name, { skip: backend.skip, concurrency: 1 }, () => {
      let db: CliDatabase
      let server: ServeProcess | undefined

      before(async () => {
        db = await openCliDatabase(backend)
        await seed(db)
      })

      after(async () => {
        server?.kill()
        await db?.close()
      })

      it('logs its address once, serves /healthz and the API on that database, and exits 0 on SIGTERM', async () => {
        const started = await serve(db.url)
        server = started.server
        assert.notEqual(started.port, '0', 'the real port, not the requested 0')
        assert.equal(
          server
            .stdout()
            .split('\n')
            .filter((line) => LISTENING.test(line)).length,
          1,
          server.stdout(),
        )

        const health = await fetch(`${started.base}/healthz`)
        assert.equal(health.status, 200)
        const listing = await fetch(`${started.base}/v1/folders`, {
          headers: { cookie: `session_id=${SESSION}` },
        })
        assert.equal(listing.status, 200)
        const body = (await listing.json()) as { folders: { name: string }[] }
        assert.deepEqual(
          body.folders.map((f) => f.name),
          ['Served'],
        )
        assert.ok(!server.stdout().includes(SESSION), 'the session id is not logged')

        server.child.kill('SIGTERM')
        const ended = await within(server.exited, 10_000, 'shutdown after SIGTERM')
        assert.deepEqual(ended, { code: 0, signal: null }, `stderr: ${server.stderr()}`)
        assert.equal(server.stderr(), '')
        await assert.rejects(fetch(`${started.base}/healthz`), 'nothing listens any more')
      })
    })
  }
})

describe('serve: settings and start-up, on SQLite', () => {
  let db: CliDatabase

  before(async () => {
    db = await openCliDatabase(sqliteBackend)
  })

  after(async () => {
    await db?.close()
  })

  const cases: { name: string; args?: string[]; options?: CliOptions; names: RegExp }[] = [
    { name: 'PORT=abc', options: { env: { PORT: 'abc' } }, names: /PORT/ },
    { name: 'PORT=70000', options: { env: { PORT: '70000' } }, names: /PORT/ },
    { name: '--port abc', args: ['--port', 'abc'], names: /--port|PORT/ },
    { name: 'LOG_LEVEL=loud', options: { env: { LOG_LEVEL: 'loud' } }, names: /LOG_LEVEL/ },
    { name: '--log-level loud', args: ['--log-level', 'loud'], names: /LOG_LEVEL|--log-level/ },
    {
      name: 'RATE_LIMIT_PER_MINUTE=-1',
      options: { env: { RATE_LIMIT_PER_MINUTE: '-1' } },
      names: /RATE_LIMIT/,
    },
    { name: 'CORS_ORIGINS=*', options: { env: { CORS_ORIGINS: '*' } }, names: /CORS_ORIGINS/ },
    { name: 'a database that cannot be opened', args: ['--db', 'sqlite:/dev/null/x.db'], names: /x\.db/ },
  ]

  it('bad PORT, --port, LOG_LEVEL, --log-level, RATE_LIMIT_PER_MINUTE, CORS_ORIGINS or --db: one line naming it, quickly', async () => {
    const started = Date.now()
    // Two at a time: each is a process start.
    for (let i = 0; i < cases.length; i += 2) {
      await Promise.all(
        cases.slice(i, i + 2).map(async ({ name, args = [], options = {}, names }) => {
          const command = ['serve', '--db', db.url, ...args]
          const result = await runCli(command, { ...options, timeoutMs: 10_000 })
          assertOneLineError(result, names, command)
          assert.doesNotMatch(result.stdout, /listening/i, `${name} must not start the server`)
        }),
      )
    }
    assert.ok(Date.now() - started < 30_000, 'each stops quickly')
  })

  it('logs exactly one address line when listening on every interface (--host 0.0.0.0)', async () => {
    const server = startCli(['serve', '--db', db.url, '--host', '0.0.0.0', '--port', '0'])
    try {
      const line = await server.waitForLine(LISTENING)
      const port = (LISTENING.exec(line) as RegExpExecArray)[2]
      // Fastify logs its listening lines before listen() resolves, so they are all out once it answers.
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200)
      const lines = server
        .stdout()
        .split('\n')
        .filter((l) => /listening at/i.test(l))
      assert.equal(lines.length, 1, `README "Command line": one line with the address\n${lines.join('\n')}`)
    } finally {
      server.child.kill('SIGTERM')
      await within(server.exited, 10_000, 'shutdown').finally(() => server.kill())
    }
  })

  it('at a terminal, says in one sentence which URL to open; to a pipe, it logs the JSON line', async () => {
    const args = ['serve', '--db', db.url, '--host', '0.0.0.0', '--port', '0']
    const terminal = startCliOnTerminal(args)
    const piped = startCli(args)
    try {
      const line = (await terminal.waitForLine(/listening at/i)).trim()
      // 0.0.0.0 is where it listens, not an address to open: the line names one that opens.
      const url =
        /^folder-service listening at (http:\/\/127\.0\.0\.1:\d+): open \1\/ in a browser \(API docs: \1\/docs\)$/.exec(
          line,
        )?.[1]
      assert.ok(url, line)
      assert.equal((await fetch(`${url}/healthz`)).status, 200)
      assert.equal(terminal.stdout().match(/listening at/gi)?.length, 1, terminal.stdout())

      const logged = JSON.parse(await piped.waitForLine(/listening at/i)) as { msg: string }
      assert.match(logged.msg, /^Server listening at http:\/\/[\d.]+:\d+$/)
    } finally {
      for (const server of [terminal, piped]) {
        server.child.kill('SIGTERM')
        await within(server.exited, 10_000, 'shutdown').finally(() => server.kill())
      }
    }
  })

  it('a port already in use: one line, non-zero exit, and the first server keeps serving', async () => {
    const first = await serve(db.url)
    try {
      const command = ['serve', '--db', db.url, '--host', '127.0.0.1', '--port', first.port]
      const result = await runCli(command, { timeoutMs: 10_000 })
      assertOneLineError(result, /EADDRINUSE|in use/i, command)
      assert.equal((await fetch(`${first.base}/healthz`)).status, 200)
      first.server.child.kill('SIGTERM')
      assert.equal((await within(first.server.exited, 10_000, 'shutdown')).code, 0)
    } finally {
      first.server.kill()
    }
  })
})
