import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { ImportError, type ImportData, type Store } from '../../src/store/store.js'
import { postgresBackend, sqliteBackend } from '../helpers/databases/backends.js'

/**
 * The PostgreSQL import checks everything before its bulk inserts, where SQLite learns of a
 * fault from the failing row. This suite feeds both backends the same validated data and
 * requires the same outcome: the same first record at fault with the same words, nothing
 * written on failure, identical data on success, also across several insert chunks.
 */

const NOW = Date.parse('2026-03-01T12:00:00.000Z')
const id = (n: number) => `1d000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

const ALICE = id(1)
const BOB = id(2)
const SESSION = id(3)
const ALICE_DOCS = id(4)
const ALICE_OLD = id(5) // deleted
const BOB_DOCS = id(6)
const FILE = id(7)
const UNKNOWN = id(99)
const MISSING = id(98)

const BASE = {
  users: [
    { id: ALICE, username: 'alice' },
    { id: BOB, username: 'bob' },
  ],
  sessions: [{ id: SESSION, user_id: ALICE, expires_at: null }],
  folders: [
    { id: ALICE_DOCS, name: 'Docs', owner_id: ALICE },
    { id: ALICE_OLD, name: 'Old', owner_id: ALICE, is_deleted: true },
    { id: BOB_DOCS, name: 'Docs', owner_id: BOB },
  ],
  files: [{ id: FILE, name: 'a.txt', owner_id: ALICE, folder_id: ALICE_DOCS }],
}

/** Documents the database must refuse, with the one message both backends give. */
const REFUSED: [string, unknown, string][] = [
  [
    'a stored user id',
    {
      users: [
        { id: id(10), username: 'carol' },
        { id: ALICE, username: 'dave' },
      ],
    },
    `users[1]: id ${ALICE} already exists`,
  ],
  [
    'a stored username',
    {
      users: [
        { id: id(10), username: 'carol' },
        { id: id(11), username: 'alice' },
      ],
    },
    "users[1]: username 'alice' already exists",
  ],
  [
    'a stored id and username in one record: the username is named, as SQLite does',
    { users: [{ id: ALICE, username: 'bob' }] },
    "users[0]: username 'bob' already exists",
  ],
  [
    'an unknown session user',
    { sessions: [{ user_id: UNKNOWN }] },
    `sessions[0]: user ${UNKNOWN} does not exist`,
  ],
  [
    'a stored session id',
    {
      sessions: [
        { id: id(12), user_id: ALICE },
        { id: SESSION, user_id: ALICE },
      ],
    },
    `sessions[1]: id ${SESSION} already exists`,
  ],
  [
    'a stored session id with an unknown user: the id is named',
    { sessions: [{ id: SESSION, user_id: UNKNOWN }] },
    `sessions[0]: id ${SESSION} already exists`,
  ],
  [
    'an unknown folder owner',
    {
      folders: [
        { name: 'x', owner_id: ALICE },
        { name: 'y', owner_id: ALICE },
        { name: 'z', owner_id: UNKNOWN },
      ],
    },
    `folders[2]: owner ${UNKNOWN} does not exist`,
  ],
  [
    'a parent that does not exist',
    { folders: [{ name: 'x', owner_id: ALICE, folder_id: MISSING }] },
    `folders[0]: parent folder ${MISSING} does not exist or belongs to another owner`,
  ],
  [
    'a stored parent of another owner',
    { folders: [{ name: 'x', owner_id: ALICE, folder_id: BOB_DOCS }] },
    `folders[0]: parent folder ${BOB_DOCS} does not exist or belongs to another owner`,
  ],
  [
    'a fault in a parent listed after its child: the parent is inserted, and named, first',
    {
      folders: [
        { name: 'child', owner_id: ALICE, folder_id: id(13) },
        { id: id(13), name: 'parent', owner_id: ALICE, folder_id: MISSING },
      ],
    },
    `folders[1]: parent folder ${MISSING} does not exist or belongs to another owner`,
  ],
  [
    'a stored folder id with an unknown owner: the id is named',
    { folders: [{ id: ALICE_DOCS, name: 'x', owner_id: UNKNOWN }] },
    `folders[0]: id ${ALICE_DOCS} already exists`,
  ],
  [
    'faults in sessions and folders: sessions are written first',
    {
      users: [{ id: id(14), username: 'erin' }],
      sessions: [{ user_id: UNKNOWN }],
      folders: [{ name: 'x', owner_id: UNKNOWN }],
    },
    `sessions[0]: user ${UNKNOWN} does not exist`,
  ],
  [
    'a file in a folder of another owner',
    { files: [{ name: 'f', owner_id: ALICE, folder_id: BOB_DOCS }] },
    `files[0]: parent folder ${BOB_DOCS} does not exist or belongs to another owner`,
  ],
  [
    'a stored file id',
    { files: [{ id: FILE, name: 'f', owner_id: ALICE }] },
    `files[0]: id ${FILE} already exists`,
  ],
  [
    'an unknown file owner',
    { files: [{ name: 'f', owner_id: UNKNOWN, folder_id: null }] },
    `files[0]: owner ${UNKNOWN} does not exist`,
  ],
]

/** Documents both backends accept, relying on what the file or the database holds. */
const ACCEPTED: [string, unknown][] = [
  [
    'a session of a user of the same file',
    { users: [{ id: id(20), username: 'frank' }], sessions: [{ user_id: id(20) }] },
  ],
  [
    'a folder under a stored deleted folder of the same owner',
    { folders: [{ name: 'x', owner_id: ALICE, folder_id: ALICE_OLD }] },
  ],
  [
    'a file in a folder of the same file, under a stored folder',
    {
      folders: [{ id: id(21), name: 'new', owner_id: BOB, folder_id: BOB_DOCS }],
      files: [{ name: 'f', owner_id: BOB, folder_id: id(21) }],
    },
  ],
]

type Outcome = string

async function outcome(store: Store, data: ImportData): Promise<Outcome> {
  try {
    return `imported ${JSON.stringify(await store.importData(data))}`
  } catch (error) {
    if (error instanceof ImportError) return `ImportError ${error.message}`
    throw error
  }
}

/**
 * Everything a later import could be affected by, as the Store shows it. The session user's
 * listing generation is left out: each backend numbers generations its own way, so only its
 * change (see generationOf) can be compared.
 */
async function snapshot(store: Store): Promise<unknown> {
  const users = await store.listUsers()
  const session = await store.findSessionUser(SESSION, NOW)
  return {
    users,
    folders: await Promise.all(users.map((user) => store.listLiveFolders(user.id))),
    session: session && { ...session, generation: 'per backend' },
    file: await store.findFolder(FILE),
  }
}

const generationOf = async (store: Store) => (await store.findSessionUser(SESSION, NOW))?.generation

describe('postgres import matches sqlite', { skip: postgresBackend.skip }, () => {
  const opened: { store: Store; cleanup(): Promise<void> }[] = []
  let sqlite: Store
  let postgres: Store

  before(async () => {
    for (const backend of [sqliteBackend, postgresBackend]) opened.push(await backend.open())
    ;[sqlite, postgres] = opened.map((o) => o.store) as [Store, Store]
    const base = validateImport(BASE, NOW)
    for (const store of [sqlite, postgres]) await store.importData(base)
  })
  after(async () => {
    for (const o of opened) await o.cleanup()
  })

  for (const [what, doc, message] of REFUSED) {
    it(`refuses ${what}, writing nothing`, async () => {
      const data = validateImport(doc, NOW)
      const before = await snapshot(postgres)
      const generations = await Promise.all([sqlite, postgres].map(generationOf))
      assert.deepEqual(await snapshot(sqlite), before)
      assert.equal(await outcome(sqlite, data), `ImportError ${message}`)
      assert.equal(await outcome(postgres, data), `ImportError ${message}`)
      assert.deepEqual(await snapshot(postgres), before)
      assert.deepEqual(await Promise.all([sqlite, postgres].map(generationOf)), generations)
    })
  }

  for (const [what, doc] of ACCEPTED) {
    it(`accepts ${what}, storing the same data`, async () => {
      const data = validateImport(doc, NOW)
      const expected = await outcome(sqlite, data)
      assert.match(expected, /^imported /)
      assert.equal(await outcome(postgres, data), expected)
      assert.deepEqual(await snapshot(postgres), await snapshot(sqlite))
    })
  }

  it('imports a parent chain 10,017 folders deep, listed children first', async () => {
    const owner = id(30)
    const count = 10_017
    const chain = Array.from({ length: count }, (_, i) => ({
      id: id(1000 + i),
      name: `level ${count - i}`,
      owner_id: owner,
      folder_id: i === 0 ? null : id(1000 + i - 1),
      created_at: new Date(NOW - i).toISOString(),
    })).reverse()
    const data = validateImport({ users: [{ id: owner, username: 'deep' }], folders: chain }, NOW)
    const expected = await outcome(sqlite, data)
    assert.equal(expected, `imported ${JSON.stringify({ users: 1, sessions: 0, folders: count, files: 0 })}`)
    assert.equal(await outcome(postgres, data), expected)
    const live = await postgres.listLiveFolders(owner)
    assert.equal(live.length, count)
    assert.deepEqual(live, await sqlite.listLiveFolders(owner))
    const deepest = id(1000 + count - 1)
    assert.deepEqual(await postgres.findFolder(deepest), await sqlite.findFolder(deepest))
  })
})
