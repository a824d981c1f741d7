import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends } from '../helpers/databases/backends.js'
import {
  assertOk,
  assertOneLineError,
  describeRun,
  printedId,
  UUID_LINE,
} from '../helpers/processes/cli-asserts.js'
import { openCliDatabase, type CliDatabase } from '../helpers/processes/cli-database.js'
import { runAll, runCli } from '../helpers/processes/cli.js'

/**
 * The admin commands of README "Command line" (user, session, folder), each judged by its
 * effect on GET /v1/folders, on every backend.
 */

// Seeded in-process, so each test below depends on as little CLI output as possible.
const ERIN = 'e0000000-0000-4000-8000-000000000001'
const FRANK = 'e0000000-0000-4000-8000-000000000002'
const ERIN_SESSION = 'e0000000-0000-4000-8000-00000000000a'
const FRANK_SESSION = 'e0000000-0000-4000-8000-00000000000b'
const FRANK_FOLDER = 'e0000000-0000-4000-8000-0000000000f2'

const HOUR = 3_600_000
const DAY = 24 * HOUR

// The backends run side by side (each has its own database): the suite is mostly process starts.
describe('folder-service user, session, folder', { concurrency: true }, () => {
  for (const backend of allBackends()) {
    describe(backend.name, { skip: backend.skip, concurrency: 1 }, () => {
      let db: CliDatabase
      const cli = (...args: string[]) => runCli([...args, '--db', db.url])

      before(async () => {
        db = await openCliDatabase(backend)
        await db.store.importData(
          validateImport(
            {
              users: [
                { id: ERIN, username: 'erin', email: 'erin@secret.example' },
                { id: FRANK, username: 'frank', email: 'frank@secret.example' },
              ],
              sessions: [
                { id: ERIN_SESSION, user_id: ERIN },
                { id: FRANK_SESSION, user_id: FRANK },
              ],
              folders: [{ id: FRANK_FOLDER, name: 'Franks', owner_id: FRANK }],
            },
            Date.now(),
          ),
        )
      })

      after(async () => {
        await db?.close()
      })

      describe('user', () => {
        it('`user add` prints the new id; `--json` prints the user; a session for it authenticates', async () => {
          const plain = [
            'user',
            'add',
            '--username',
            'carol',
            '--email',
            'carol@secret.example',
            '--db',
            db.url,
          ]
          const json = [
            'user',
            'add',
            '--username',
            'dave',
            '--avatar-url',
            'https://example.org/d.png',
            '--json',
          ]
          const [carolRun, daveRun] = await runAll([plain, [...json, '--db', db.url]])
          const carolId = printedId(carolRun!, plain)
          assertOk(daveRun!, json)
          const dave = JSON.parse(daveRun!.stdout) as Record<string, unknown>
          assert.deepEqual(Object.keys(dave).sort(), ['frozen', 'id', 'username'])
          assert.equal(dave.username, 'dave')
          assert.equal(dave.frozen, false)
          assert.match(String(dave.id), UUID_LINE)

          const carol = await db.store.findUser('carol')
          assert.equal(carol?.id, carolId)
          assert.equal(carol?.email, 'carol@secret.example')
          assert.equal((await db.store.findUser('dave'))?.avatar_url, 'https://example.org/d.png')

          // The user is real to the API: a session made for it lists its (empty) root.
          const sessionId = printedId(await cli('session', 'add', '--user', 'carol'))
          assert.deepEqual(await db.names(sessionId), [])
        })

        it('refuses a duplicate username with one line and writes nothing', async () => {
          const before = await db.counts()
          const args = ['user', 'add', '--username', 'erin', '--db', db.url]
          // In the command line's words: no import record position such as `users[0]: `.
          assertOneLineError(await runCli(args), /^folder-service: username 'erin' already exists$/, args)
          assert.deepEqual(await db.counts(), before)
        })

        it('`user freeze` gives 403 FROZEN_ACCOUNT, `user unfreeze` 200 again, by username or by id', async () => {
          assert.equal((await db.list(ERIN_SESSION)).status, 200)

          assertOk(await cli('user', 'freeze', 'erin'))
          const frozen = await db.list(ERIN_SESSION)
          assert.equal(frozen.status, 403)
          assert.equal(frozen.body.code, 'FROZEN_ACCOUNT')
          assert.equal((await db.list(FRANK_SESSION)).status, 200, 'only erin is frozen')

          assertOk(await cli('user', 'unfreeze', 'erin'))
          assert.equal((await db.list(ERIN_SESSION)).status, 200)

          const byId = await cli('user', 'freeze', ERIN, '--json')
          assertOk(byId)
          assert.deepEqual(JSON.parse(byId.stdout), { id: ERIN, username: 'erin', frozen: true })
          assert.equal((await db.list(ERIN_SESSION)).body.code, 'FROZEN_ACCOUNT')
          assertOk(await cli('user', 'unfreeze', ERIN))
          assert.equal((await db.list(ERIN_SESSION)).status, 200)
        })

        it('`user freeze` of an unknown user fails with one line', async () => {
          const args = ['user', 'freeze', 'nobody', '--db', db.url]
          assertOneLineError(await runCli(args), /nobody/, args)
        })

        it('`user list` and `--json` show id, username and frozen, never the e-mail', async () => {
          await db.store.setUserFrozen(FRANK, true, Date.now())
          try {
            const [text, json] = await runAll([
              ['user', 'list', '--db', db.url],
              ['user', 'list', '--json', '--db', db.url],
            ])
            assertOk(text!)
            assertOk(json!)
            for (const output of [text!.stdout, json!.stdout]) {
              assert.doesNotMatch(output, /secret\.example|@/, 'no e-mail address')
            }
            const lines = text!.stdout.trim().split('\n')
            const erinLine = lines.find((line) => line.includes('erin'))
            const frankLine = lines.find((line) => line.includes('frank'))
            assert.ok(erinLine?.includes(ERIN), text!.stdout)
            assert.ok(frankLine?.includes(FRANK), text!.stdout)
            assert.match(frankLine ?? '', /frozen/)
            assert.doesNotMatch(erinLine ?? '', /frozen/)

            const users = JSON.parse(json!.stdout) as Record<string, unknown>[]
            for (const user of users) assert.deepEqual(Object.keys(user).sort(), ['frozen', 'id', 'username'])
            assert.deepEqual(
              users.filter((u) => u.username === 'erin' || u.username === 'frank'),
              [
                { id: ERIN, username: 'erin', frozen: false },
                { id: FRANK, username: 'frank', frozen: true },
              ],
            )
            assert.equal(users.length, (await db.counts()).users)
          } finally {
            await db.store.setUserFrozen(FRANK, false, Date.now())
          }
        })
      })

      describe('session', () => {
        it('`session add --ttl 12h` prints an id that authenticates and lasts 12 hours', async () => {
          const started = Date.now()
          const sessionId = printedId(await cli('session', 'add', '--user', 'erin', '--ttl', '12h'))
          assert.equal((await db.list(sessionId)).status, 200)
          assert.equal((await db.store.findSessionUser(sessionId, started + 11 * HOUR))?.id, ERIN)
          assert.equal(await db.store.findSessionUser(sessionId, Date.now() + 12 * HOUR + 1000), null)
        })

        it('`session add --json` by user id defaults to 30 days', async () => {
          const started = Date.now()
          const result = await cli('session', 'add', '--user', FRANK, '--json')
          assertOk(result)
          const session = JSON.parse(result.stdout) as { id: string; user_id: string; expires_at: string }
          assert.equal(session.user_id, FRANK)
          const expires = Date.parse(session.expires_at)
          assert.ok(expires >= started + 30 * DAY && expires <= Date.now() + 30 * DAY, session.expires_at)
          assert.deepEqual(await db.names(session.id), ['Franks'])
        })

        it('refuses a bad --ttl (12, 0d, abc) or an unknown user with one line, writing nothing', async () => {
          const before = await db.counts()
          const commands = [
            ...['12', '0d', 'abc'].map((ttl) => ['session', 'add', '--user', 'erin', `--ttl=${ttl}`]),
            ['session', 'add', '--user', 'nobody'],
          ].map((args) => [...args, '--db', db.url])
          const results = await runAll(commands, {}, 3)
          results.slice(0, -1).forEach((result, i) => assertOneLineError(result, /ttl/, commands[i]))
          assertOneLineError(results.at(-1)!, /nobody/, commands.at(-1))
          assert.deepEqual(await db.counts(), before)
        })

        it('`session revoke` ends the session (401); an unknown or malformed id fails with one line', async () => {
          const sessionId = printedId(await cli('session', 'add', '--user', 'erin'))
          assert.equal((await db.list(sessionId)).status, 200)
          assertOk(await cli('session', 'revoke', sessionId))
          const revoked = await db.list(sessionId)
          assert.equal(revoked.status, 401)
          assert.equal(revoked.body.code, 'UNAUTHORIZED')
          assert.equal((await db.list(ERIN_SESSION)).status, 200, 'other sessions are untouched')

          const commands = [
            ['session', 'revoke', sessionId, '--db', db.url],
            ['session', 'revoke', 'not-a-session', '--db', db.url],
          ]
          const [again, malformed] = await runAll(commands)
          assertOneLineError(again!, new RegExp(sessionId), commands[0])
          assertOneLineError(malformed!, /not-a-session/, commands[1])
        })
      })

      describe('folder', () => {
        let docs: string
        let sub: string

        it('`folder add` trims the name and the folder appears under it; `--parent` nests', async () => {
          docs = printedId(await cli('folder', 'add', '--user', 'erin', '--name', ' Docs '))
          const root = await db.list(ERIN_SESSION)
          assert.equal(root.status, 200)
          assert.deepEqual(
            root.body.folders?.map((f) => [f.id, f.name, f.folder_id]),
            [[docs, 'Docs', null]],
          )
          const result = await cli(
            'folder',
            'add',
            '--user',
            ERIN,
            '--name',
            'Sub',
            '--parent',
            docs,
            '--json',
          )
          assertOk(result)
          const created = JSON.parse(result.stdout) as {
            id: string
            name: string
            folder_id: string
            owner_id: string
          }
          sub = created.id
          assert.deepEqual(created, { id: sub, name: 'Sub', folder_id: docs, owner_id: ERIN })
          assert.deepEqual(await db.names(ERIN_SESSION, docs), ['Sub'])
          assert.deepEqual(await db.names(ERIN_SESSION), ['Docs'], 'nested, not at the root')
        })

        it('refuses a parent of another user, an unknown parent, a bad name or an unknown user, writing nothing', async () => {
          const before = await db.counts()
          const commands = [
            ['folder', 'add', '--user', 'erin', '--name', 'X', '--parent', FRANK_FOLDER],
            [
              'folder',
              'add',
              '--user',
              'erin',
              '--name',
              'X',
              '--parent',
              'e0000000-0000-4000-8000-0000000000ff',
            ],
            ['folder', 'add', '--user', 'erin', '--name', 'X', '--parent', 'not-a-uuid'],
            ['folder', 'add', '--user', 'erin', '--name', '   '],
            ['folder', 'add', '--user', 'erin', '--name', 'x'.repeat(256)],
            ['folder', 'add', '--user', 'nobody', '--name', 'X'],
          ].map((args) => [...args, '--db', db.url])
          const results = await runAll(commands, {}, 3)
          const expected = [
            new RegExp(FRANK_FOLDER),
            /e0000000-0000-4000-8000-0000000000ff/,
            /not-a-uuid/,
            /^folder-service: folder name is empty after trimming$/,
            /^folder-service: folder name is longer than 255 characters$/,
            /nobody/,
          ]
          results.forEach((result, i) => assertOneLineError(result, expected[i], commands[i]))
          assert.deepEqual(await db.counts(), before)
          assert.deepEqual(await db.names(FRANK_SESSION), ['Franks'])
          assert.deepEqual(await db.names(ERIN_SESSION), ['Docs'])
        })

        it('`folder add` reaches followers of the parent as one upsert, not as a reset of the feed', async () => {
          const start = await db.store.readChanges({ ownerId: FRANK, parentId: null, after: null, limit: 10 })
          assert.equal(start.outcome, 'changes')
          if (start.outcome !== 'changes') return
          const id = printedId(await cli('folder', 'add', '--user', 'frank', '--name', 'Followed'))
          const read = await db.store.readChanges({
            ownerId: FRANK,
            parentId: null,
            after: start.present,
            limit: 10,
          })
          assert.equal(read.outcome, 'changes', 'a position from before the add is still valid')
          if (read.outcome !== 'changes') return
          assert.deepEqual(
            read.rows.map((row) => (row.kind === 'folder' ? [row.id, row.folder?.name] : [row.kind])),
            [[id, 'Followed']],
          )
          assert.equal(await db.store.markFolderDeleted(id, Date.now()), true)
        })

        it('`folder add` takes a 255-character name', async () => {
          const name = '\u{1F4C1}'.repeat(255)
          const id = printedId(await cli('folder', 'add', '--user', 'frank', '--name', name))
          assert.deepEqual(await db.names(FRANK_SESSION), ['Franks', name])
          assert.equal(await db.store.markFolderDeleted(id, Date.now()), true)
        })

        it('`folder tree` prints the nesting by indentation; `--json` lists the folders', async () => {
          const [text, json] = await runAll([
            ['folder', 'tree', '--user', 'erin', '--db', db.url],
            ['folder', 'tree', '--user', ERIN, '--json', '--db', db.url],
          ])
          assertOk(text!)
          const lines = text!.stdout.trimEnd().split('\n')
          assert.equal(lines.length, 2, text!.stdout)
          const [docsLine, subLine] = lines as [string, string]
          assert.match(docsLine, /^Docs\b/)
          assert.ok(docsLine.includes(docs))
          assert.match(subLine, /^\s+Sub\b/, 'Sub is indented under Docs')
          assert.ok(subLine.includes(sub))
          assert.doesNotMatch(text!.stdout, /Franks/, "another user's folders are not shown")

          assertOk(json!)
          assert.deepEqual(JSON.parse(json!.stdout), [
            { id: docs, name: 'Docs', folder_id: null },
            { id: sub, name: 'Sub', folder_id: docs },
          ])
        })

        it('`folder tree` of a 10,000-deep chain prints 10,000 short lines; names are escaped', async () => {
          const GRACE = 'e0000000-0000-4000-8000-000000000003'
          const chain = Array.from({ length: 10_000 }, (_, i) => ({
            id: `e1000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
            name: i === 0 ? 'top\u001b[31mRED\u001b[2J\rFAKE' : `level ${i}`,
            owner_id: GRACE,
            folder_id: i === 0 ? null : `e1000000-0000-4000-8000-${(i - 1).toString(16).padStart(12, '0')}`,
          }))
          await db.store.importData(
            validateImport({ users: [{ id: GRACE, username: 'grace' }], folders: chain }, Date.now()),
          )
          const run = await cli('folder', 'tree', '--user', 'grace')
          assertOk(run)
          const lines = run.stdout.trimEnd().split('\n')
          assert.equal(lines.length, 10_000)
          assert.ok(run.stdout.length < 10_000 * 120, `${run.stdout.length} bytes`)
          assert.equal(lines[0], `top\\u001b[31mRED\\u001b[2J\\u000dFAKE/  ${chain[0]?.id}`)
          assert.ok(
            !run.stdout.includes('\u001b') && !run.stdout.includes('\r'),
            'no ESC or CR reaches the terminal',
          )
          assert.match(lines.at(-1) ?? '', /^ {40}\[depth 9999\] level 9999\/ /)
        })

        it('`folder tree` of an unknown user fails with one line', async () => {
          const args = ['folder', 'tree', '--user', 'nobody', '--db', db.url]
          assertOneLineError(await runCli(args), /nobody/, args)
        })

        it('`folder delete` removes it from the listing and the tree; deleting again fails with one line', async () => {
          assertOk(await cli('folder', 'delete', sub))
          assert.deepEqual(await db.names(ERIN_SESSION, docs), [])
          assert.equal((await db.store.findFolder(sub))?.is_deleted, true, 'logical: the row is kept')

          const commands = [
            ['folder', 'delete', sub, '--db', db.url],
            ['folder', 'delete', 'e0000000-0000-4000-8000-0000000000ff', '--db', db.url],
            ['folder', 'tree', '--user', 'erin', '--db', db.url],
          ]
          const [again, unknown, tree] = await runAll(commands)
          assertOneLineError(again!, new RegExp(sub), commands[0])
          assertOneLineError(unknown!, /e0000000-0000-4000-8000-0000000000ff/, commands[1])
          assertOk(tree!)
          assert.equal(tree!.stdout.trimEnd().split('\n').length, 1, describeRun(commands[2]!, tree!))
          assert.doesNotMatch(tree!.stdout, /Sub/)
        })
      })
    })
  }
})

// Argument errors are the parser's, the same whatever the database: checked once.
describe('folder-service: unknown commands and options', () => {
  it('fail with one line and print nothing on stdout', async () => {
    const commands = [['frobnicate'], ['user', 'frobnicate'], ['user', 'list', '--bogus'], ['folder', 'tree']]
    const results = await runAll(commands, {}, 3)
    // One prefix for every error, the parser's included: the command's name.
    const expected = [
      /^folder-service: unknown command 'frobnicate'$/,
      /^folder-service: unknown command 'frobnicate'$/,
      /^folder-service: unknown option '--bogus'$/,
      /^folder-service: required option '--user <user>' not specified$/,
    ]
    results.forEach((result, i) => {
      assertOneLineError(result, expected[i], commands[i])
      assert.equal(result.stdout, '', describeRun(commands[i]!, result))
    })
  })
})
