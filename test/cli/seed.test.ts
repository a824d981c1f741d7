import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { assertOk, assertOneLineError, describeRun } from '../helpers/processes/cli-asserts.js'
import { openCliDatabase, type CliDatabase } from '../helpers/processes/cli-database.js'
import { runCli, type CliResult } from '../helpers/processes/cli.js'

/** `folder-service seed --demo` (README "Command line"), driven from outside, on every backend. */

const DEMO_ROOT = ['Documents', 'Music', 'Photos', 'Projects', 'archive']

function sessionIdOf(result: CliResult, args: string[]): string {
  assertOk(result, args)
  const match = /^session_id:\s+([0-9a-f-]{36})$/m.exec(result.stdout)
  assert.ok(match, `a session_id line\n${describeRun(args, result)}`)
  return match[1] as string
}

// The backends run side by side (each has its own database): the suite is mostly process starts.
describe('folder-service seed', { concurrency: true }, () => {
  for (const backend of allBackends()) {
    describe(backend.name, { skip: backend.skip, concurrency: 1 }, () => {
      let db: CliDatabase

      before(async () => {
        db = await openCliDatabase(backend)
      })

      after(async () => {
        await db?.close()
      })

      it('refuses `seed` without --demo: one line, non-zero exit, nothing written', async () => {
        const args = ['seed', '--db', db.url]
        assertOneLineError(await runCli(args), /--demo/, args)
        assert.deepEqual(await db.counts(), { users: 0, sessions: 0, folders: 0, files: 0 })
      })

      it('creates the demo once: same session id on a second run, no duplicate rows', async () => {
        const args = ['seed', '--demo', '--db', db.url]
        const first = await runCli(args)
        const sessionId = sessionIdOf(first, args)
        assert.match(first.stdout, /created/)
        const curl = /^.*\bcurl\b.*$/m.exec(first.stdout)?.[0] ?? ''
        assert.ok(
          curl.includes(`session_id=${sessionId}`),
          `the curl command carries the session\n${first.stdout}`,
        )
        assert.match(curl, /http:\/\/127\.0\.0\.1:3000\/v1\/folders/)
        const afterFirst = await db.counts()
        assert.ok(
          afterFirst.folders > 5 && afterFirst.users >= 1 && afterFirst.sessions === 1,
          JSON.stringify(afterFirst),
        )

        // The curl names the address serve gets from the same settings: `--port`, or PORT as
        // in `PORT=3100 npm run demo`.
        const onPort = [...args, '--port', '3100']
        const second = await runCli(onPort)
        assert.equal(sessionIdOf(second, onPort), sessionId, 'the same session id')
        assert.match(second.stdout, /already present/)
        assert.match(second.stdout, /^try: +curl .*'http:\/\/127\.0\.0\.1:3100\/v1\/folders'$/m)
        const third = await runCli(args, { env: { PORT: '3200', HOST: '0.0.0.0' } })
        assert.match(third.stdout, /^try: +curl .*'http:\/\/127\.0\.0\.1:3200\/v1\/folders'$/m)
        assert.deepEqual(await db.counts(), afterFirst, 'no duplicate data')

        // The printed session works and sees the demo's root: code point order, deleted folder absent.
        assert.deepEqual(await db.names(sessionId), DEMO_ROOT)
      })

      it('brings a revoked demo session back, without touching the rest', async () => {
        const args = ['seed', '--demo', '--db', db.url, '--json']
        const shown = JSON.parse((await runCli(args)).stdout) as {
          sessionId: string
          curl: string
          created: boolean
        }
        assert.equal(shown.created, false)
        assert.ok(shown.curl.includes(shown.sessionId))
        const before = await db.counts()
        assert.equal(await db.store.deleteSession(shown.sessionId), true)
        assert.equal((await db.list(shown.sessionId)).status, 401)
        const again = await runCli(['seed', '--demo', '--db', db.url])
        assert.equal(sessionIdOf(again, args), shown.sessionId)
        assert.deepEqual(await db.names(shown.sessionId), DEMO_ROOT)
        assert.deepEqual(await db.counts(), before)
      })
    })
  }
})
