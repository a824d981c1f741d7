import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends } from '../helpers/databases/backends.js'
import { assertOk, assertOneLineError, describeRun } from '../helpers/processes/cli-asserts.js'
import { openCliDatabase, tempDir, writeJson, type CliDatabase } from '../helpers/processes/cli-database.js'
import { runCli } from '../helpers/processes/cli.js'

/** `folder-service import FILE` (docs/api.md "Import format"), driven from outside, on every backend. */

// Already in the database before any import of this file runs (seeded in-process).
const ANN = 'a0000000-0000-4000-8000-000000000001'
const BEN = 'a0000000-0000-4000-8000-000000000002'
const ANN_SESSION = 'a0000000-0000-4000-8000-00000000005a'
const ANN_FOLDER = 'a0000000-0000-4000-8000-0000000000f1'
const BEN_FOLDER = 'a0000000-0000-4000-8000-0000000000f2'

// Written by the good file; upper case in the file, lower case once stored.
const ALICE = 'A11CE000-0000-4000-8000-0000000000AA'
const BOB = 'B0B00000-0000-4000-8000-0000000000BB'
const ALICE_SESSION = 'A11CE000-0000-4000-8000-00000000C001'
const BOB_SESSION = 'B0B00000-0000-4000-8000-00000000C002'
const CORA = 'C0A00000-0000-4000-8000-0000000000CC'
const CORA_SESSION = 'C0A00000-0000-4000-8000-00000000C003'
const EXPIRED_SESSION = 'A11CE000-0000-4000-8000-00000000C0FF'
const PARENT = 'A11CE000-0000-4000-8000-00000000F001'
const CHILD = 'A11CE000-0000-4000-8000-00000000F002'

const NAME_255 = 'n'.repeat(255)
// 255 code points, 510 UTF-16 units: the limit counts characters, not units or bytes.
const ASTRAL_255 = '\u{1F4C1}'.repeat(255)

function goodFile() {
  return {
    users: [
      { id: ALICE, username: 'alice', email: 'alice@example.org', avatar_url: 'https://example.org/a.png' },
      { id: BOB, username: 'bob', is_suspended: false, password_hash: 'x' },
      { id: CORA, username: 'cora', is_suspended: true },
    ],
    sessions: [
      { id: ALICE_SESSION, user_id: ALICE, expires_at: '2099-01-01T00:00:00Z' },
      { id: BOB_SESSION, user_id: BOB, expires_at: null },
      { id: CORA_SESSION, user_id: CORA },
      { id: EXPIRED_SESSION, user_id: ALICE, expires_at: '2020-01-01T00:00:00+01:00' },
    ],
    folders: [
      // the child comes before its parent
      {
        id: CHILD,
        name: '  Child  ',
        folder_id: PARENT,
        owner_id: ALICE,
        created_at: '2026-01-02T00:00:00+02:00',
      },
      {
        id: PARENT,
        name: '\tParent\n',
        folder_id: null,
        owner_id: ALICE,
        created_at: '2026-01-01T00:00:00Z',
      },
      { name: `  ${NAME_255}\u3000`, owner_id: ALICE }, // 255 after trimming
      { name: ASTRAL_255, owner_id: ALICE },
      { name: 'Gone', owner_id: ALICE, is_deleted: true },
      { name: 'Bobs', owner_id: BOB },
    ],
    files: [
      { name: ' a.txt ', owner_id: ALICE, size: 12 },
      { name: 'b.txt', folder_id: CHILD, owner_id: ALICE, size: 0, is_deleted: false },
    ],
  }
}

/**
 * Valid records of every kind, written first in each bad file: they must not survive
 * either. Numbered per case, so a case that wrongly writes is named even when cases run
 * side by side.
 */
function validPrefix(n: number) {
  const hex = n.toString(16).padStart(4, '0')
  return {
    userId: `c000${hex}-0000-4000-8000-000000000001`,
    username: `prefix-user-${n}`,
    sessionId: `c000${hex}-0000-4000-8000-00000000000a`,
    folderId: `c000${hex}-0000-4000-8000-0000000000f1`,
    fileId: `c000${hex}-0000-4000-8000-0000000000e1`,
    other: (last: string) => `c000${hex}-0000-4000-8000-${last.padStart(12, '0')}`,
  }
}
type Prefix = ReturnType<typeof validPrefix>

function prefixData(p: Prefix): Record<Kind, Record<string, unknown>[]> {
  return {
    users: [{ id: p.userId, username: p.username }],
    sessions: [{ id: p.sessionId, user_id: ANN }],
    folders: [{ id: p.folderId, name: 'Prefix', owner_id: ANN }],
    files: [{ id: p.fileId, name: 'prefix.txt', owner_id: ANN }],
  }
}

type Kind = 'users' | 'sessions' | 'folders' | 'files'
interface Bad {
  name: string
  kind: Kind
  /** appended to the valid record at index 0 of `kind` */
  records: (p: Prefix) => Record<string, unknown>[]
  /** what the one stderr line must say besides the record */
  reason: RegExp
  /** the record to be named; `${kind}[1]` unless given */
  at?: string
}

const NO_SUCH = 'dead0000-0000-4000-8000-000000000000'
const folder = (extra: Record<string, unknown>) => ({ name: 'Bad', owner_id: ANN, ...extra })

const BAD_CASES: Bad[] = [
  {
    name: 'an empty name after trimming',
    kind: 'folders',
    records: () => [folder({ name: ' \t\n ' })],
    reason: /empty/,
  },
  {
    name: 'a 256-character name',
    kind: 'folders',
    records: () => [folder({ name: 'x'.repeat(256) })],
    reason: /255/,
  },
  {
    name: 'a 256-code-point astral name',
    kind: 'folders',
    records: () => [folder({ name: '\u{1F4C1}'.repeat(256) })],
    reason: /255/,
  },
  { name: 'a name with NUL', kind: 'folders', records: () => [folder({ name: 'a\u0000b' })], reason: /NUL/ },
  {
    name: 'a parent that does not exist',
    kind: 'folders',
    records: () => [folder({ folder_id: NO_SUCH })],
    reason: /parent/,
  },
  {
    name: 'a parent of another owner in the same file',
    kind: 'folders',
    records: (p) => [
      { id: p.other('b1'), name: 'Bens new', owner_id: BEN },
      folder({ folder_id: p.other('b1') }),
    ],
    reason: /another owner/,
    at: 'folders[2]',
  },
  {
    name: 'a parent of another owner already in the database',
    kind: 'folders',
    records: () => [folder({ folder_id: BEN_FOLDER })],
    reason: /parent/,
  },
  {
    name: 'a file in a folder of another owner already in the database',
    kind: 'files',
    records: () => [{ name: 'f.txt', owner_id: ANN, folder_id: BEN_FOLDER }],
    reason: /parent|folder/,
  },
  {
    name: 'a duplicate id in the file',
    kind: 'folders',
    records: (p) => [folder({ id: p.folderId })],
    reason: /duplicate/,
  },
  {
    name: 'a duplicate id in the file differing only in letter case',
    kind: 'folders',
    records: (p) => [folder({ id: p.folderId.toUpperCase() })],
    reason: /duplicate/,
  },
  {
    name: 'a folder id already in the database',
    kind: 'folders',
    records: () => [folder({ id: ANN_FOLDER })],
    reason: /exists/,
  },
  {
    name: 'a user id already in the database',
    kind: 'users',
    records: (p) => [{ id: ANN.toUpperCase(), username: `${p.username}-other` }],
    reason: /exists/,
  },
  {
    name: 'a session id already in the database',
    kind: 'sessions',
    records: () => [{ id: ANN_SESSION, user_id: ANN }],
    reason: /exists/,
  },
  {
    name: 'a duplicate username in the file',
    kind: 'users',
    records: (p) => [{ username: p.username }],
    reason: /duplicate username/,
  },
  {
    name: 'a username already in the database',
    kind: 'users',
    records: () => [{ username: 'ann' }],
    reason: /ann/,
  },
  { name: 'a malformed UUID', kind: 'folders', records: () => [folder({ id: 'not-a-uuid' })], reason: /id/ },
  {
    name: 'an impossible date (2026-02-30)',
    kind: 'folders',
    records: () => [folder({ created_at: '2026-02-30T00:00:00Z' })],
    reason: /created_at/,
  },
  {
    name: "the timestamp 'yesterday'",
    kind: 'folders',
    records: () => [folder({ updated_at: 'yesterday' })],
    reason: /updated_at/,
  },
  {
    name: 'a timestamp without offset',
    kind: 'sessions',
    records: () => [{ user_id: ANN, expires_at: '2030-01-01T00:00:00' }],
    reason: /expires_at/,
  },
  {
    name: 'an unknown key (parent_id)',
    kind: 'folders',
    records: () => [folder({ parent_id: ANN_FOLDER })],
    reason: /parent_id/,
  },
  {
    name: 'a wrong type (is_deleted: "yes")',
    kind: 'folders',
    records: () => [folder({ is_deleted: 'yes' })],
    reason: /is_deleted/,
  },
  {
    name: 'a parent cycle',
    kind: 'folders',
    records: (p) => [
      folder({ id: p.other('c1'), folder_id: p.other('c2') }),
      folder({ id: p.other('c2'), folder_id: p.other('c1') }),
    ],
    reason: /cycle|ancestor/,
  },
  {
    name: 'a session for a user that does not exist',
    kind: 'sessions',
    records: () => [{ user_id: NO_SUCH }],
    reason: /user/,
  },
  {
    name: 'an owner that does not exist',
    kind: 'folders',
    records: () => [folder({ owner_id: NO_SUCH })],
    reason: /owner/,
  },
  {
    name: 'a file owner that does not exist',
    kind: 'files',
    records: () => [folder({ owner_id: NO_SUCH })],
    reason: /owner/,
  },
]

// The backends run side by side (each has its own database): the suite is mostly process starts.
describe('folder-service import', { concurrency: true }, () => {
  for (const backend of allBackends()) {
    describe(backend.name, { skip: backend.skip, concurrency: 1 }, () => {
      let db: CliDatabase
      let tmp: ReturnType<typeof tempDir>

      before(async () => {
        tmp = tempDir()
        db = await openCliDatabase(backend)
        await db.store.importData(
          validateImport(
            {
              users: [
                { id: ANN, username: 'ann' },
                { id: BEN, username: 'ben' },
              ],
              sessions: [{ id: ANN_SESSION, user_id: ANN }],
              folders: [
                { id: ANN_FOLDER, name: 'Anns', owner_id: ANN },
                { id: BEN_FOLDER, name: 'Bens', owner_id: BEN },
              ],
            },
            Date.now(),
          ),
        )
      })

      after(async () => {
        await db?.close()
        tmp?.remove()
      })

      it('imports a good file: counts printed, names trimmed, ids lower-cased, child before parent', async () => {
        const before = await db.counts()
        const args = ['import', writeJson(tmp.dir, 'good.json', goodFile()), '--db', db.url]
        const result = await runCli(args)
        assertOk(result, args)
        assert.match(
          result.stdout,
          /^imported 3 users, 4 sessions, 6 folders, 2 files in [0-9.]+ s \([0-9,]+ records\/s\)\n$/,
        )
        assert.deepEqual(await db.counts(), {
          users: before.users + 3,
          sessions: before.sessions + 4,
          folders: before.folders + 6,
          files: before.files + 2,
        })

        // Upper-case ids in the file, lower-case session cookie: the same session.
        const root = await db.list(ALICE_SESSION.toLowerCase())
        assert.equal(root.status, 200, JSON.stringify(root.body))
        assert.deepEqual(
          root.body.folders?.map((f) => f.name),
          ['Parent', NAME_255, ASTRAL_255],
          'trimmed, code point order, deleted one absent, 255-character names kept whole',
        )
        assert.equal(root.body.folders?.[0]?.id, PARENT.toLowerCase())
        const children = await db.list(ALICE_SESSION, PARENT.toLowerCase())
        assert.equal(children.status, 200)
        assert.deepEqual(children.body.folders, [
          {
            ...children.body.folders?.[0],
            id: CHILD.toLowerCase(),
            name: 'Child',
            folder_id: PARENT.toLowerCase(),
          },
        ])
        assert.deepEqual(await db.names(BOB_SESSION), ['Bobs'])
        const frozen = await db.list(CORA_SESSION)
        assert.equal(frozen.status, 403, 'is_suspended: true imports a frozen account')
        assert.equal(frozen.body.code, 'FROZEN_ACCOUNT')
        assert.equal(
          (await db.list(EXPIRED_SESSION)).status,
          401,
          'an imported expiry in the past is honoured',
        )

        const alice = await db.store.findUser('alice')
        assert.equal(alice?.id, ALICE.toLowerCase())
        assert.equal(alice?.email, 'alice@example.org')
        assert.equal(alice?.avatar_url, 'https://example.org/a.png')
        const child = await db.store.findFolder(CHILD.toLowerCase())
        assert.equal(child?.created_at, Date.parse('2026-01-01T22:00:00Z'), 'the offset is applied')
      })

      it('prints the counts as JSON with --json', async () => {
        const file = writeJson(tmp.dir, 'json.json', { users: [{ username: 'json-user' }], folders: [] })
        const args = ['import', file, '--db', db.url, '--json']
        const result = await runCli(args)
        assertOk(result, args)
        const printed = JSON.parse(result.stdout) as Record<string, unknown>
        assert.deepEqual(
          { ...printed, seconds: 0, records_per_second: 0 },
          { users: 1, sessions: 0, folders: 0, files: 0, seconds: 0, records_per_second: 0 },
        )
        assert.equal(typeof printed.seconds, 'number')
        assert.equal(typeof printed.records_per_second, 'number')
        assert.notEqual(await db.store.findUser('json-user'), null)
      })

      // Bad files write nothing, so they run side by side (a process spawn dominates each).
      describe(
        'refuses bad data: one line naming the record, non-zero exit, nothing written',
        { concurrency: 3 },
        () => {
          BAD_CASES.forEach((bad, n) => {
            it(`refuses ${bad.name}`, async () => {
              const p = validPrefix(n)
              const data = prefixData(p)
              data[bad.kind].push(...bad.records(p))
              const at = bad.at ?? `${bad.kind}[1]`
              const before = await db.counts()
              const args = ['import', writeJson(tmp.dir, `bad-${n}.json`, data), '--db', db.url]
              const result = await runCli(args)
              const line = assertOneLineError(result, bad.reason, args)
              assert.ok(line.includes(at), `the message names ${at}\n${describeRun(args, result)}`)
              assert.equal(result.stdout, '', 'no success line')
              // Nothing of this file, not even the valid records before the bad one...
              assert.equal(await db.store.findUser(p.userId), null, 'users[0] was written')
              assert.equal(
                await db.store.findSessionUser(p.sessionId, Date.now()),
                null,
                'sessions[0] was written',
              )
              assert.equal(await db.store.findFolder(p.folderId), null, 'folders[0] was written')
              // ...and nothing at all (files have no Store read, the counts cover them).
              assert.deepEqual(await db.counts(), before, 'rows were written')
            })
          })
        },
      )

      it('refuses broken JSON with one line and no stack trace', async () => {
        const path = join(tmp.dir, 'broken.json')
        writeFileSync(path, '{"users": [{"username": "x"},')
        const before = await db.counts()
        const args = ['import', path, '--db', db.url]
        const result = await runCli(args)
        assertOneLineError(result, /broken\.json.*JSON/, args)
        assert.deepEqual(await db.counts(), before)
      })

      it('refuses a data file of the wrong shape, naming the array', async () => {
        const args = [
          'import',
          writeJson(tmp.dir, 'object.json', { users: { username: 'x' } }),
          '--db',
          db.url,
        ]
        assertOneLineError(await runCli(args), /users/, args)
      })

      it('refuses a missing file with one line naming it', async () => {
        const args = ['import', join(tmp.dir, 'no-such-file.json'), '--db', db.url]
        const result = await runCli(args)
        assertOneLineError(result, /no-such-file\.json/, args)
      })
    })
  }
})
