import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { READ_CHUNK_BYTES } from '../../src/import/read-import-file.js'
import { allBackends, sqliteBackend } from '../helpers/databases/backends.js'
import { childEnv } from '../helpers/processes/child-process.js'
import { assertOk, assertOneLineError, describeRun } from '../helpers/processes/cli-asserts.js'
import { cliMain, runCli } from '../helpers/processes/cli.js'
import { useCliDatabase } from '../helpers/processes/cli-database.js'

/**
 * `folder-service import` of a file several times larger than one read: the records arrive
 * over several reads (and, on PostgreSQL, over a COPY already under way), and a bad record
 * at the start, in the middle or at the end still fails the whole import with its index.
 */

const FOLDERS = 12_000
const OWNER = 'e0000000-0000-4000-8000-000000000001'
const SESSION = 'e0000000-0000-4000-8000-0000000000aa'
const folderId = (n: number) => `e1000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
/** Folders 0..9 are roots; every other hangs under an earlier one, so every level is crowded. */
const parentOf = (n: number) => (n < 10 ? null : Math.floor(n / 10))

type Folder = Record<string, unknown>

function folder(n: number, tag: string): Folder {
  const parent = parentOf(n)
  return {
    id: folderId(n),
    name: `${tag} folder ${n} with a name long enough to make the file large`,
    folder_id: parent === null ? null : folderId(parent),
    owner_id: OWNER,
    created_at: new Date(Date.UTC(2026, 0, 1) + n).toISOString(),
  }
}

/** The data file, children written before their parents; `change` may replace a folder. */
function writeLargeFile(path: string, tag: string, change?: (n: number, f: Folder) => Folder): void {
  const lines: string[] = []
  for (let i = 0; i < FOLDERS; i++) {
    const n = FOLDERS - 1 - i
    lines.push(JSON.stringify(change === undefined ? folder(n, tag) : change(i, folder(n, tag))))
  }
  const users = JSON.stringify([{ id: OWNER, username: `streamer-${tag}` }])
  const sessions = JSON.stringify([{ id: SESSION, user_id: OWNER }])
  writeFileSync(
    path,
    `{"users": ${users}, "sessions": ${sessions},\n"folders": [\n${lines.join(',\n')}\n]}\n`,
  )
}

const POSITIONS = { start: 0, middle: FOLDERS / 2, end: FOLDERS - 1 }
const NO_SUCH = 'e2000000-0000-4000-8000-000000000000'

/** Each bad record: what replaces folders[at], the index named and the words. */
const BAD: {
  what: string
  change: (at: number, f: Folder) => Folder
  named: (at: number) => number
  reason: RegExp
}[] = [
  { what: 'an empty name', change: (_, f) => ({ ...f, name: '  ' }), named: (at) => at, reason: /empty/ },
  {
    what: 'an id used twice',
    // Takes the id of the record after (before, at the end): the second one is named.
    change: (at, f) => ({ ...f, id: folderId(FOLDERS - 1 - (at === FOLDERS - 1 ? at - 1 : at + 1)) }),
    named: (at) => (at === FOLDERS - 1 ? at : at + 1),
    reason: /duplicate id/,
  },
  {
    what: 'an unknown parent',
    change: (_, f) => ({ ...f, folder_id: NO_SUCH }),
    named: (at) => at,
    reason: /parent/,
  },
  {
    what: 'an unknown owner',
    change: (_, f) => ({ ...f, owner_id: NO_SUCH }),
    named: (at) => at,
    reason: /owner/,
  },
  {
    what: 'its own parent (a cycle)',
    change: (_, f) => ({ ...f, folder_id: f.id }),
    named: (at) => at,
    reason: /cycle/,
  },
]

describe('folder-service import of a large file', { concurrency: true }, () => {
  for (const backend of allBackends()) {
    describe(backend.name, { skip: backend.skip, concurrency: 1 }, () => {
      const opened = useCliDatabase(backend)

      describe(
        'refuses a bad record at the start, middle or end, writing nothing',
        { concurrency: 3 },
        () => {
          BAD.forEach((bad, b) => {
            for (const [where, at] of Object.entries(POSITIONS)) {
              it(`${bad.what} at the ${where}`, async () => {
                const { db, dir } = opened
                const path = join(dir, `bad-${b}-${where}.json`)
                writeLargeFile(path, `bad${b}${where}`, (i, f) => (i === at ? bad.change(at, f) : f))
                const before = await db.counts()
                const args = ['import', path, '--db', db.url]
                const result = await runCli(args, { timeoutMs: 60_000 })
                const line = assertOneLineError(result, bad.reason, args)
                const named = `folders[${bad.named(at)}]`
                assert.ok(line.includes(`${named}: `), `names ${named}\n${describeRun(args, result)}`)
                assert.deepEqual(await db.counts(), before, 'rows were written')
              })
            }
          })
        },
      )

      it('imports a file larger than one read: every folder, counts and listings right', async () => {
        const { db, dir } = opened
        const path = join(dir, 'good.json')
        writeLargeFile(path, 'good')
        assert.ok(statSync(path).size > 2 * READ_CHUNK_BYTES, 'the file spans several reads')
        const before = await db.counts()
        const args = ['import', path, '--db', db.url]
        const result = await runCli(args, { timeoutMs: 60_000 })
        assertOk(result, args)
        assert.match(
          result.stdout,
          new RegExp(`^imported 1 users, 1 sessions, ${FOLDERS} folders, 0 files in `),
        )
        assert.deepEqual(await db.counts(), {
          ...before,
          users: before.users + 1,
          sessions: before.sessions + 1,
          folders: before.folders + FOLDERS,
        })
        const root = await db.list(SESSION)
        assert.equal(root.status, 200)
        assert.equal(root.body.total, 10, 'the ten roots')
        // Folder 5 has the children 50..59; folder 50 the children 500..509.
        const children = await db.list(SESSION, folderId(50))
        assert.equal(children.body.total, 10)
        assert.deepEqual(
          children.body.folders?.map((f) => f.id).sort(),
          Array.from({ length: 10 }, (_, i) => folderId(500 + i)).sort(),
        )
      })
    })
  }
})

describe('import progress', () => {
  // Both tests import the same records: each has a database of its own.
  const forTerminal = useCliDatabase(sqliteBackend)
  const forPipe = useCliDatabase(sqliteBackend)

  it('shows a progress line on a terminal (a pseudo-terminal made by script(1))', async () => {
    const { db, dir } = forTerminal
    const path = join(dir, 'tty.json')
    writeLargeFile(path, 'tty')
    const command = [process.execPath, cliMain(), 'import', path, '--db', db.url]
      .map((a) => `'${a}'`)
      .join(' ')
    const output = await new Promise<string>((resolve, reject) => {
      execFile(
        'script',
        ['-qfec', command, '/dev/null'],
        { env: childEnv(), encoding: 'utf8', timeout: 60_000 },
        (error, stdout) => {
          if (error === null) resolve(stdout)
          else reject(new Error(error.message, { cause: error }))
        },
      )
    })
    assert.ok(output.includes('\r\u001b[Kimporting: '), 'a progress line, rewritten in place')
    assert.match(output, /importing: [0-9,]+ records/)
    assert.match(output, /MB \(\d+%\), [0-9,]+ records\/s/, 'bytes of the total and a rate')
    assert.match(
      output,
      new RegExp(
        `imported 1 users, 1 sessions, ${FOLDERS} folders, 0 files in [0-9.]+ s \\([0-9,]+ records/s\\)`,
      ),
    )
  })

  it('writes nothing but the summary when not on a terminal', async () => {
    const { db, dir } = forPipe
    const path = join(dir, 'pipe.json')
    writeLargeFile(path, 'pipe')
    const args = ['import', path, '--db', db.url]
    const result = await runCli(args, { timeoutMs: 60_000 })
    assertOk(result, args)
    assert.equal(result.stderr, '', 'no progress on a pipe')
    assert.match(
      result.stdout,
      /^imported 1 users, 1 sessions, 12000 folders, 0 files in [0-9.]+ s \([0-9,]+ records\/s\)\n$/,
    )
  })
})
