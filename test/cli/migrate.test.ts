import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { assertOk, assertOneLineError } from '../helpers/processes/cli-asserts.js'
import { openCliDatabase, tableCounts, tempDir, type CliDatabase } from '../helpers/processes/cli-database.js'
import { runAll, runCli } from '../helpers/processes/cli.js'

/** `folder-service migrate` (README "Command line") and how `--db` picks and opens a database. */

// The backends run side by side (each has its own database): the suite is mostly process starts.
describe('folder-service migrate', { concurrency: true }, () => {
  for (const backend of allBackends()) {
    describe(backend.name, { skip: backend.skip, concurrency: 1 }, () => {
      let db: CliDatabase

      before(async () => {
        db = await openCliDatabase(backend)
      })

      after(async () => {
        await db?.close()
      })

      it('exits 0 on an up-to-date database, twice in a row, and leaves the data alone', async () => {
        await db.store.importData({
          users: [
            {
              at: 'users[0]',
              row: {
                id: 'f0000000-0000-4000-8000-000000000001',
                username: 'kept',
                email: null,
                avatar_url: null,
                password_hash: null,
                is_suspended: false,
                created_at: 0,
                updated_at: 0,
              },
            },
          ],
          sessions: [],
          folders: [],
          files: [],
        })
        const args = ['migrate', '--db', db.url]
        for (let run = 1; run <= 2; run++) {
          const result = await runCli(args)
          assertOk(result, args)
          assert.match(result.stdout, /up to date/)
        }
        assert.deepEqual(await db.counts(), { users: 1, sessions: 0, folders: 0, files: 0 })
      })
    })
  }
})

describe('sqlite: migrate and --db on files', () => {
  let tmp: ReturnType<typeof tempDir>

  before(() => {
    tmp = tempDir()
  })

  after(() => tmp?.remove())

  it('creates a missing database file in an existing directory; a second run is a no-op', async () => {
    const path = join(tmp.dir, 'fresh.db')
    const args = ['migrate', '--db', `sqlite:${path}`]
    const results = [await runCli(args), await runCli(args)]
    for (const result of results) assertOk(result, args)
    const [first, second] = results.map((result) => result.stdout.trim())
    assert.match(
      String(first),
      /^applied \d+ SQLite schema steps, 001-\S+ to \d+-\S+ \(numbered alike on both backends; each skips the numbers it does not need\); schema is up to date$/,
    )
    assert.equal(second, 'schema is up to date (nothing to apply)')
    assert.ok(existsSync(path), 'the database file exists')
    assert.deepEqual(await tableCounts(`sqlite:${path}`), { users: 0, sessions: 0, folders: 0, files: 0 })
  })

  it('refuses a --db or DATABASE_URL whose directory does not exist, in every command, creating nothing', async () => {
    const missing = join(tmp.dir, 'no-such-dir', 'deeper')
    const path = join(missing, 'x.db')
    const importFile = join(tmp.dir, 'empty-import.json')
    writeFileSync(importFile, '{}')
    const commands = [
      ['serve', '--db', path, '--port', '0'],
      ['migrate', '--db', `sqlite:${path}`],
      ['import', importFile, '--db', path],
      ['user', 'list', '--db', path],
    ]
    const results = await runAll(commands)
    results.forEach((result, index) =>
      assertOneLineError(result, /DATABASE_URL: .*no-such-dir.* does not exist.*--db/, commands[index]),
    )
    const byEnv = await runCli(['migrate'], { env: { DATABASE_URL: `sqlite:${path}` } })
    assertOneLineError(byEnv, /DATABASE_URL: .*does not exist/, ['migrate'])
    assert.ok(!existsSync(join(tmp.dir, 'no-such-dir')), 'no directory was made')
  })

  it('refuses a database URL of a scheme it does not use (mysql://, file://): one line, no file made', async () => {
    const cwd = join(tmp.dir, 'schemes')
    mkdirSync(cwd)
    for (const url of ['mysql://app@db.example/app', 'file:///tmp/x.db']) {
      const result = await runCli(['migrate', '--db', url], { cwd })
      assertOneLineError(result, /DATABASE_URL: '(mysql|file):\/\/' is no database this service uses/, [
        'migrate',
      ])
    }
    assert.deepEqual(readdirSync(cwd), [], 'no file or directory was made')
  })

  it('creates the default ./data/ directory (and only that one)', async () => {
    const cwd = join(tmp.dir, 'default-cwd')
    mkdirSync(cwd)
    const result = await runCli(['migrate'], { cwd, env: { DATABASE_URL: undefined } })
    assertOk(result, ['migrate'])
    assert.ok(existsSync(join(cwd, 'data', 'folder-service.db')), 'the default database file exists')
  })

  it('takes a plain file path, DATABASE_URL, and --db over DATABASE_URL', async () => {
    const plain = join(tmp.dir, 'plain.db')
    const fromEnv = join(tmp.dir, 'from-env.db')
    const fromFlag = join(tmp.dir, 'from-flag.db')
    const [byPath, byEnv] = await runAll([['migrate', '--db', plain], ['migrate']], {
      env: { DATABASE_URL: `sqlite:${fromEnv}` },
    })
    assertOk(byPath!)
    assertOk(byEnv!)
    assert.ok(existsSync(plain), 'a plain path selects SQLite')
    assert.ok(existsSync(fromEnv), 'DATABASE_URL is used without --db')
    const flagWins = await runCli(['migrate', '--db', `sqlite:${fromFlag}`], {
      env: { DATABASE_URL: `sqlite:${join(tmp.dir, 'not-this.db')}` },
    })
    assertOk(flagWins)
    assert.ok(existsSync(fromFlag))
    assert.ok(!existsSync(join(tmp.dir, 'not-this.db')), '--db wins over DATABASE_URL')
  })

  it('gives one line and a non-zero exit for a path that cannot be created, or a file that is not a database', async () => {
    const regularFile = join(tmp.dir, 'regular-file')
    writeFileSync(regularFile, 'just a file\n')
    const notDb = join(tmp.dir, 'not-a-database.db')
    const garbage =
      'this is not a SQLite database, just some text that is long enough to have a header\n'.repeat(20)
    writeFileSync(notDb, garbage)
    mkdirSync(join(tmp.dir, 'a-directory.db'))
    const commands = [
      ['migrate', '--db', `sqlite:${join(regularFile, 'x.db')}`],
      ['migrate', '--db', `sqlite:${notDb}`],
      ['migrate', '--db', `sqlite:${join(tmp.dir, 'a-directory.db')}`],
      ['migrate', '--db', 'sqlite:'],
    ]
    const [underFile, notADatabase, directory, empty] = await runAll(commands)
    assertOneLineError(underFile!, /x\.db|regular-file/, commands[0])
    assertOneLineError(notADatabase!, /not-a-database\.db|not a database/, commands[1])
    assertOneLineError(directory!, /a-directory\.db/, commands[2])
    assertOneLineError(empty!, /DATABASE_URL|sqlite/i, commands[3])
    assert.equal(readFileSync(notDb, 'utf8'), garbage, 'the foreign file is left as it was')
  })
})

describe('postgres: an unreachable server', { skip: allBackends()[1]?.skip ?? false }, () => {
  it('gives one line and a non-zero exit, quickly', async () => {
    const args = ['migrate', '--db', 'postgres://nobody:secret@127.0.0.1:1/none']
    const started = Date.now()
    const line = assertOneLineError(await runCli(args), undefined, args)
    assert.ok(Date.now() - started < 10_000, 'within the connect timeout')
    assert.ok(!line.includes('secret'), `the password is not printed: ${line}`)
  })
})
