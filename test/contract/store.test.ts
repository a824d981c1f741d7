import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { ImportError, type FolderRow, type SessionUser, type Store } from '../../src/store/store.js'
import { openStore } from '../../src/store/open-store.js'
import { allBackends, TEST_SETTINGS, throughPooler } from '../helpers/databases/backends.js'
import {
  BIG_LIVE_CHILDREN,
  BOUNDARY,
  NOW,
  UNKNOWN_ID,
  allFolders,
  datasetDocument,
  expectedChildren,
  expectedLiveFolders,
  files,
  folders,
  loadDataset,
  loadDocument,
  sessions,
  toRow,
  users,
} from '../helpers/fixtures/contract-data.js'
import { compareCodePoints } from '../../src/ordering/code-points.js'
import { uuid } from '../helpers/fixtures/ids.js'

/**
 * The Store contract (src/store/store.ts JSDoc, docs/api.md "Order" and "Data model"), held against
 * every available backend with one data set per backend.
 */

const LOWER_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const rowKeys = ['created_at', 'folder_id', 'id', 'name', 'updated_at']

function assertRows(actual: FolderRow[], expected: FolderRow[]): void {
  for (const row of actual) assert.deepEqual(Object.keys(row).sort(), rowKeys)
  assert.deepEqual(actual, expected)
}

async function expectImportError(
  store: Store,
  doc: unknown,
  record: string,
  reason: RegExp,
): Promise<ImportError> {
  let caught: unknown
  try {
    await loadDocument(store, doc)
  } catch (error) {
    caught = error
  }
  assert.ok(caught instanceof ImportError, `expected ImportError, got ${String(caught)}`)
  assert.equal(caught.record, record)
  assert.ok(caught.message.startsWith(`${record}: `), caught.message)
  assert.match(caught.message, reason)
  return caught
}

describe('fixture helpers', () => {
  it('compareCodePoints orders by code point, unlike the default UTF-16 sort', () => {
    assert.ok(compareCodePoints('Gamma', 'alpha') < 0)
    assert.ok(compareCodePoints('\uFF21 fullwidth', '😀 smile') < 0)
    // the default sort compares code units, and a surrogate (0xD83D) is below 0xFF21
    assert.deepEqual(['\uFF21 fullwidth', '😀 smile'].sort(), ['😀 smile', '\uFF21 fullwidth'])
    assert.ok(compareCodePoints('ab', 'abc') < 0)
    assert.equal(compareCodePoints('x', 'x'), 0)
  })
})

describe('validateImport (backend independent)', () => {
  const owner = uuid('a0000000', 99)
  const base = () => ({
    users: [{ id: owner, username: 'v' }],
    folders: [
      { id: uuid('f0000000', 1), name: 'a', owner_id: owner },
      { id: uuid('f0000000', 2), name: 'b', owner_id: owner },
      { id: uuid('f0000000', 3), name: 'c', owner_id: owner },
    ] as Record<string, unknown>[],
  })
  const refused = (mutate: (doc: ReturnType<typeof base>) => void, record: string, reason: RegExp) => {
    const doc = base()
    mutate(doc)
    assert.throws(
      () => validateImport(doc, NOW),
      (error: unknown) =>
        error instanceof ImportError &&
        error.record === record &&
        error.message.startsWith(`${record}: `) &&
        reason.test(error.message),
    )
  }

  it('names the record of an empty name after trimming', () => {
    refused((d) => (d.folders[2] = { ...d.folders[2], name: '   ' }), 'folders[2]', /empty/)
  })
  it('names the record of an over-long name, and accepts 255 code points of astral characters', () => {
    refused((d) => (d.folders[1] = { ...d.folders[1], name: 'x'.repeat(256) }), 'folders[1]', /longer/)
    const doc = base()
    doc.folders[0] = { ...doc.folders[0], name: '😀'.repeat(255) }
    assert.equal(validateImport(doc, NOW).folders.find((f) => f.at === 'folders[0]')?.row.name.length, 510)
  })
  it('names the record of a malformed UUID or timestamp', () => {
    refused((d) => (d.folders[1] = { ...d.folders[1], owner_id: 'nope' }), 'folders[1]', /owner_id/)
    refused(
      (d) => (d.folders[2] = { ...d.folders[2], created_at: '2026-02-30T00:00:00Z' }),
      'folders[2]',
      /created_at/,
    )
  })
})

for (const backend of throughPooler(allBackends())) {
  describe(`${backend.name}: Store contract`, { skip: backend.skip }, () => {
    let store: Store
    let opened: Awaited<ReturnType<typeof backend.open>> | undefined

    before(async () => {
      opened = await backend.open()
      store = opened.store
      const counts = await loadDataset(store)
      assert.deepEqual(counts, {
        users: Object.keys(users).length,
        sessions: Object.keys(sessions).length,
        folders: allFolders.length,
        files: files.length,
      })
    })
    after(async () => {
      await opened?.cleanup()
    })

    describe('findSessionUser', () => {
      it('returns exactly the public fields, the frozen flag and the listing generation of a live session user', async () => {
        const alice = await store.findSessionUser(sessions.aliceLive.id, NOW)
        assert.ok(alice && Number.isSafeInteger(alice.generation) && alice.generation > 0)
        assert.deepEqual(alice, {
          id: users.alice.id,
          username: 'alice',
          avatar_url: users.alice.avatar_url,
          is_suspended: false,
          generation: alice.generation,
        })
        const dave = await store.findSessionUser(sessions.daveLive.id, NOW)
        assert.deepEqual(dave, {
          id: users.dave.id,
          username: 'dave',
          avatar_url: null,
          is_suspended: false,
          generation: dave?.generation,
        })
        assert.equal(typeof dave?.generation, 'number')
      })

      it('reports a frozen user with is_suspended true', async () => {
        const u = await store.findSessionUser(sessions.carolLive.id, NOW)
        assert.equal(u?.id, users.carol.id)
        assert.equal(u?.is_suspended, true)
      })

      it('is live while expires_at > now and expired from expires_at == now on', async () => {
        const id = sessions.aliceBoundary.id
        assert.equal((await store.findSessionUser(id, BOUNDARY - 1))?.id, users.alice.id)
        assert.equal(await store.findSessionUser(id, BOUNDARY), null)
        assert.equal(await store.findSessionUser(id, BOUNDARY + 1), null)
      })

      it('returns null for an expired session', async () => {
        assert.equal(await store.findSessionUser(sessions.aliceExpired.id, NOW), null)
        assert.equal(await store.findSessionUser(sessions.carolExpired.id, NOW), null)
      })

      it('never expires a session whose expires_at is null', async () => {
        const farFuture = Date.parse('9999-12-31T23:59:59.999Z')
        assert.equal((await store.findSessionUser(sessions.aliceNever.id, farFuture))?.id, users.alice.id)
        assert.equal((await store.findSessionUser(sessions.daveLive.id, farFuture))?.id, users.dave.id)
      })

      it('returns null for an unknown session, including a user id used as a session id', async () => {
        assert.equal(await store.findSessionUser(UNKNOWN_ID, NOW), null)
        assert.equal(await store.findSessionUser(users.alice.id, NOW), null)
      })

      it('answers each of many concurrent lookups as it would alone, each at its own clock reading', async () => {
        const asked: [string, number][] = [
          [sessions.aliceLive.id, NOW],
          [sessions.daveLive.id, NOW],
          [sessions.aliceBoundary.id, BOUNDARY - 1],
          [sessions.aliceBoundary.id, BOUNDARY],
          [sessions.aliceExpired.id, NOW],
          [UNKNOWN_ID, NOW],
          [sessions.carolLive.id, NOW],
          [sessions.aliceLive.id, NOW],
        ]
        const rounds = 20
        const alone: (SessionUser | null)[] = []
        for (const [id, now] of asked) alone.push(await store.findSessionUser(id, now))
        assert.deepEqual(
          alone.map((user) => user?.id ?? null),
          [users.alice.id, users.dave.id, users.alice.id, null, null, null, users.carol.id, users.alice.id],
        )
        const together = await Promise.all(
          Array.from({ length: rounds }, () =>
            asked.map(([id, now]) => store.findSessionUser(id, now)),
          ).flat(),
        )
        assert.deepEqual(together, Array.from({ length: rounds }, () => alone).flat())
      })
    })

    describe('findSessionUsers', () => {
      it('answers each id in its order as findSessionUser would at the same now, an id twice twice', async () => {
        const ids = [
          sessions.aliceLive.id,
          UNKNOWN_ID,
          sessions.carolLive.id,
          sessions.aliceExpired.id,
          'not-a-session-id',
          sessions.daveLive.id,
          sessions.aliceLive.id,
          users.alice.id,
        ]
        for (const now of [NOW, BOUNDARY - 1, BOUNDARY]) {
          const alone: (SessionUser | null)[] = []
          for (const id of ids) alone.push(await store.findSessionUser(id, now))
          assert.deepEqual(await store.findSessionUsers([...ids, sessions.aliceBoundary.id], now), [
            ...alone,
            await store.findSessionUser(sessions.aliceBoundary.id, now),
          ])
        }
        const found = await store.findSessionUsers(ids, NOW)
        assert.deepEqual(
          found.map((user) => user?.id ?? null),
          [users.alice.id, null, users.carol.id, null, null, users.dave.id, users.alice.id, null],
        )
        assert.equal(found[2]?.is_suspended, true)
        assert.deepEqual(await store.findSessionUsers([], NOW), [])
      })
    })

    describe('listFolders', () => {
      const all = (ownerId: string, parentId: string | null) =>
        store.listFolders({ ownerId, parentId, page: 1, limit: 1000 })

      it('lists the root in code point order, then created_at, then id', async () => {
        const page = await all(users.alice.id, null)
        const expected = expectedChildren(users.alice.id, null)
        assert.ok(page)
        assertRows(page.folders, expected.map(toRow))
        assert.equal(page.total, expected.length)
        const names = page.folders.map((f) => f.name)
        // spot checks of the order that a collation or a UTF-16 sort would get wrong
        const at = (name: string) => names.indexOf(name)
        assert.ok(at('Gamma') < at('alpha'), 'upper case before lower case')
        assert.ok(at('Zeta') < at('zeta'))
        assert.ok(at('10 ten') < at('9 nine'))
        assert.ok(at('E\u0301mile') < at('a') && at('alpha') < at('Émile'), 'no Unicode normalisation')
        assert.ok(at('\uFF21 fullwidth') < at('😀 smile'), 'astral after U+FF21')
        assert.equal(names.at(-1), '😀 smile')
        assert.ok(names.includes('Padded'), 'names are stored trimmed')
      })

      it('breaks name ties by created_at, then by id', async () => {
        const page = await all(users.alice.id, null)
        const docs = page?.folders.filter((f) => f.name === 'Docs').map((f) => f.id)
        assert.deepEqual(docs, [folders.docsOldLowId.id, folders.docsOldHighId.id, folders.docsNewest.id])
      })

      it('orders a large sibling set with many ties exactly like the contract', async () => {
        const page = await all(users.alice.id, folders.big.id)
        const expected = expectedChildren(users.alice.id, folders.big.id)
        assert.equal(expected.length, BIG_LIVE_CHILDREN)
        assert.equal(page?.total, BIG_LIVE_CHILDREN)
        assertRows(page?.folders ?? [], expected.map(toRow))
      })

      it('slices pages and reports the full total on each', async () => {
        const expected = expectedChildren(users.alice.id, folders.big.id).map(toRow)
        for (const [page, limit] of [
          [1, 7],
          [2, 7],
          [33, 7],
          [1, 100],
          [3, 100],
          [5, 50],
        ] as const) {
          const result = await store.listFolders({
            ownerId: users.alice.id,
            parentId: folders.big.id,
            page,
            limit,
          })
          assert.equal(result?.total, BIG_LIVE_CHILDREN, `total on page ${page}, limit ${limit}`)
          assertRows(result?.folders ?? [], expected.slice((page - 1) * limit, page * limit))
        }
      })

      it('returns an empty page with the true total beyond the last page', async () => {
        const far = await store.listFolders({
          ownerId: users.alice.id,
          parentId: folders.big.id,
          page: 2147483647,
          limit: 100,
        })
        assert.deepEqual(far, { folders: [], total: BIG_LIVE_CHILDREN })
        const justAfter = await store.listFolders({
          ownerId: users.alice.id,
          parentId: null,
          page: 2,
          limit: 100,
        })
        assert.deepEqual(justAfter, { folders: [], total: expectedChildren(users.alice.id, null).length })
      })

      it('lists direct children only and excludes deleted children', async () => {
        const nested = await all(users.alice.id, folders.nested.id)
        assertRows(nested?.folders ?? [], [toRow(folders.level1), toRow(folders.volatile)])
        assert.equal(nested?.total, 2)
        const level1 = await all(users.alice.id, folders.level1.id)
        assertRows(level1?.folders ?? [], [toRow(folders.level2)])
        const root = await all(users.alice.id, null)
        const ids = new Set(root?.folders.map((f) => f.id))
        for (const f of allFolders.filter((x) => x.is_deleted || x.folder_id !== null)) {
          assert.ok(!ids.has(f.id), `${f.name} is not a live root folder`)
        }
        assert.equal(
          (await all(users.alice.id, folders.big.id))?.folders.some((f) =>
            allFolders.some((x) => x.id === f.id && x.is_deleted),
          ),
          false,
        )
      })

      it('returns null for a missing, foreign or deleted parent, and for a file id', async () => {
        const q = (parentId: string, ownerId = users.alice.id) =>
          store.listFolders({ ownerId, parentId, page: 1, limit: 50 })
        assert.equal(await q(UNKNOWN_ID), null)
        assert.equal(await q(folders.bobPrivate.id), null)
        assert.equal(await q(folders.deletedRoot.id), null)
        assert.equal(await q(files[2]?.id ?? ''), null)
        // bob sees his own, alice's is foreign to him
        assertRows((await q(folders.bobPrivate.id, users.bob.id))?.folders ?? [], [toRow(folders.bobChild)])
        assert.equal(await q(folders.big.id, users.bob.id), null)
      })

      it('never returns another user’s folders, and gives an empty root to a user without folders', async () => {
        const bobRoot = await all(users.bob.id, null)
        assertRows(bobRoot?.folders ?? [], [toRow(folders.bobPrivate), toRow(folders.bobAlpha)])
        assert.deepEqual(await all(users.empty.id, null), { folders: [], total: 0 })
        assert.deepEqual(await all(UNKNOWN_ID, null), { folders: [], total: 0 })
      })

      it('returns numbers for timestamps and lower-case ids', async () => {
        const root = await all(users.alice.id, folders.nested.id)
        for (const f of root?.folders ?? []) {
          assert.equal(typeof f.created_at, 'number')
          assert.equal(typeof f.updated_at, 'number')
          assert.match(f.id, LOWER_UUID)
          assert.match(f.folder_id ?? '', LOWER_UUID)
        }
        assert.equal(typeof root?.total, 'number')
      })
    })

    describe('importData', () => {
      const owner = users.alice.id
      const snapshot = async () => ({
        users: await store.countUsers(),
        aliceFolders: (await store.listLiveFolders(owner)).length,
        bobFolders: (await store.listLiveFolders(users.bob.id)).length,
      })
      /** three good folders, then whatever `bad` is, at index 3 */
      const withBadFolder = (bad: Record<string, unknown>) => ({
        users: [{ id: uuid('a0000000', 0x77), username: 'atomic-user' }],
        sessions: [{ id: uuid('5e550000', 0x77), user_id: uuid('a0000000', 0x77) }],
        folders: [
          { id: uuid('f0000000', 0x7700), name: 'atomic-0', owner_id: owner },
          {
            id: uuid('f0000000', 0x7701),
            name: 'atomic-1',
            owner_id: owner,
            folder_id: uuid('f0000000', 0x7700),
          },
          { id: uuid('f0000000', 0x7702), name: 'atomic-2', owner_id: owner, folder_id: folders.big.id },
          bad,
        ],
      })

      it('writes nothing when a folder names a parent the database does not hold', async () => {
        const before = await snapshot()
        const error = await expectImportError(
          store,
          withBadFolder({
            id: uuid('f0000000', 0x7703),
            name: 'bad',
            owner_id: owner,
            folder_id: UNKNOWN_ID,
          }),
          'folders[3]',
          /parent/,
        )
        assert.ok(error.message.includes(UNKNOWN_ID), error.message)
        assert.deepEqual(await snapshot(), before)
        assert.equal(await store.findUser('atomic-user'), null)
        assert.equal(await store.findSessionUser(uuid('5e550000', 0x77), NOW), null)
        assert.equal(await store.findFolder(uuid('f0000000', 0x7700)), null)
      })

      it('writes nothing when a parent belongs to another owner, stored or in the same file', async () => {
        const before = await snapshot()
        const cases = [
          { owner_id: owner, folder_id: folders.bobPrivate.id, reason: /parent/ },
          { owner_id: users.bob.id, folder_id: uuid('f0000000', 0x7700), reason: /belongs to another owner/ },
        ]
        for (const { reason, ...placed } of cases) {
          await expectImportError(
            store,
            withBadFolder({ id: uuid('f0000000', 0x7703), name: 'bad', ...placed }),
            'folders[3]',
            reason,
          )
        }
        assert.deepEqual(await snapshot(), before)
      })

      it('writes nothing when an id already exists in the database', async () => {
        const before = await snapshot()
        await expectImportError(
          store,
          withBadFolder({ id: folders.alpha.id, name: 'again', owner_id: owner }),
          'folders[3]',
          /already exists|duplicate/,
        )
        await expectImportError(
          store,
          { users: [{ username: 'fresh-1' }, { id: users.bob.id, username: 'fresh-2' }] },
          'users[1]',
          /already exists|duplicate/,
        )
        assert.deepEqual(await snapshot(), before)
        assert.equal(await store.findUser('fresh-1'), null)
      })

      it('names the second record of an id used twice in the file, and the first', async () => {
        const before = await snapshot()
        const error = await expectImportError(
          store,
          withBadFolder({ id: uuid('f0000000', 0x7701), name: 'twice', owner_id: owner }),
          'folders[3]',
          /duplicate id/,
        )
        assert.ok(error.message.includes('folders[1]'), error.message)
        assert.deepEqual(await snapshot(), before)
      })

      it('writes nothing when a username is taken, a session’s user or a folder’s owner is unknown', async () => {
        const before = await snapshot()
        await expectImportError(
          store,
          { users: [{ username: 'fresh-3' }, { username: 'alice' }] },
          'users[1]',
          /alice/,
        )
        await expectImportError(
          store,
          {
            users: [{ username: 'fresh-4' }],
            sessions: [{ user_id: users.alice.id }, { user_id: UNKNOWN_ID }],
          },
          'sessions[1]',
          /user/,
        )
        await expectImportError(
          store,
          withBadFolder({ id: uuid('f0000000', 0x7703), name: 'bad', owner_id: UNKNOWN_ID }),
          'folders[3]',
          /owner/,
        )
        await expectImportError(
          store,
          {
            folders: [{ id: uuid('f0000000', 0x7710), name: 'ok', owner_id: owner }],
            files: [
              { name: 'ok.txt', owner_id: owner, folder_id: uuid('f0000000', 0x7710) },
              { name: 'bad.txt', owner_id: owner, folder_id: UNKNOWN_ID },
            ],
          },
          'files[1]',
          /parent/,
        )
        assert.deepEqual(await snapshot(), before)
        assert.equal(await store.findUser('fresh-3'), null)
        assert.equal(await store.findUser('fresh-4'), null)
        assert.equal(await store.findFolder(uuid('f0000000', 0x7710)), null)
      })

      it('round-trips timestamps to the millisecond, truncating finer digits, with offsets', async () => {
        const u = uuid('a0000000', 0x88)
        const ids = [0x8800, 0x8801, 0x8802, 0x8803].map((n) => uuid('f0000000', n))
        const counts = await loadDocument(store, {
          users: [{ id: u, username: 'timely', created_at: '2026-01-02T03:04:05.678Z' }],
          sessions: [{ id: uuid('5e550000', 0x88), user_id: u, expires_at: '2030-05-06T07:08:09.999+02:00' }],
          folders: [
            {
              id: ids[0],
              name: 't0',
              owner_id: u,
              created_at: '2026-01-02T03:04:05.678Z',
              updated_at: '2026-01-02T03:04:05.679Z',
            },
            { id: ids[1], name: 't1', owner_id: u, created_at: '2026-01-02T03:04:05.6789+02:00' },
            { id: ids[2], name: 't2', owner_id: u, created_at: '0001-01-01T00:00:00.000Z' },
            { id: ids[3], name: 't3', owner_id: u, created_at: '9999-12-31T23:59:59.999Z' },
          ],
        })
        assert.deepEqual(counts, { users: 1, sessions: 1, folders: 4, files: 0 })
        const created = async (id: string | undefined) => (await store.findFolder(id ?? ''))?.created_at
        assert.equal(await created(ids[0]), Date.parse('2026-01-02T03:04:05.678Z'))
        assert.equal(
          (await store.findFolder(ids[0] ?? ''))?.updated_at,
          Date.parse('2026-01-02T03:04:05.679Z'),
        )
        assert.equal(await created(ids[1]), Date.parse('2026-01-02T01:04:05.678Z'))
        assert.equal(await created(ids[2]), Date.parse('0001-01-01T00:00:00.000Z'))
        assert.equal(await created(ids[3]), Date.parse('9999-12-31T23:59:59.999Z'))
        // updated_at defaults to created_at
        assert.equal(
          (await store.findFolder(ids[1] ?? ''))?.updated_at,
          Date.parse('2026-01-02T01:04:05.678Z'),
        )
        assert.equal((await store.findUser(u))?.created_at, Date.parse('2026-01-02T03:04:05.678Z'))
        const expiry = Date.parse('2030-05-06T05:08:09.999Z')
        assert.equal((await store.findSessionUser(uuid('5e550000', 0x88), expiry - 1))?.id, u)
        assert.equal(await store.findSessionUser(uuid('5e550000', 0x88), expiry), null)
        const listed = await store.listFolders({ ownerId: u, parentId: null, page: 1, limit: 10 })
        assert.deepEqual(
          listed?.folders.map((f) => [f.name, f.created_at]),
          [
            ['t0', Date.parse('2026-01-02T03:04:05.678Z')],
            ['t1', Date.parse('2026-01-02T01:04:05.678Z')],
            ['t2', Date.parse('0001-01-01T00:00:00.000Z')],
            ['t3', Date.parse('9999-12-31T23:59:59.999Z')],
          ],
        )
      })

      it('fails on users[0] when the whole data set is imported again, and changes nothing', async () => {
        const before = await snapshot()
        await expectImportError(store, datasetDocument(), 'users[0]', /already exists/)
        assert.deepEqual(await snapshot(), before)
      })

      it('stores names of 255 characters counted in code points, astral and accented, intact', async () => {
        const u = uuid('a0000000', 0xbb)
        const names = ['😀'.repeat(255), 'é'.repeat(255), 'x'.repeat(255), ' \t 😀 inner  spaces 😀 \t ']
        await loadDocument(store, {
          users: [{ id: u, username: 'long-names' }],
          folders: names.map((name, i) => ({ id: uuid('f0000000', 0xbb00 + i), name, owner_id: u })),
        })
        const listed = await store.listFolders({ ownerId: u, parentId: null, page: 1, limit: 10 })
        assert.deepEqual(
          listed?.folders.map((f) => f.name),
          ['x'.repeat(255), 'é'.repeat(255), '😀 inner  spaces 😀', '😀'.repeat(255)],
        )
      })

      it('stores upper-case ids of the file in lower case, and accepts a child before its parent', async () => {
        const u = uuid('a0000000', 0x99)
        const parent = uuid('f0000000', 0x9900)
        const child = uuid('f0000000', 0x9901)
        await loadDocument(store, {
          users: [{ id: u.toUpperCase(), username: 'upper' }],
          folders: [
            {
              id: child.toUpperCase(),
              name: 'child',
              owner_id: u.toUpperCase(),
              folder_id: parent.toUpperCase(),
            },
            { id: parent.toUpperCase(), name: 'parent', owner_id: u },
          ],
        })
        const found = await store.findFolder(child)
        assert.equal(found?.id, child)
        assert.equal(found?.folder_id, parent)
        assert.equal(found?.owner_id, u)
        assert.equal((await store.findUser(u))?.id, u)
      })
    })

    describe('users, sessions and folders', () => {
      it('findUser finds by id and by username, with every stored field', async () => {
        const { alice } = users
        const expected = { ...alice }
        assert.deepEqual(await store.findUser(alice.id), expected)
        assert.deepEqual(await store.findUser('alice'), expected)
        assert.deepEqual(await store.findUser('empty'), { ...users.empty })
        assert.equal(await store.findUser('nobody'), null)
        assert.equal(await store.findUser(UNKNOWN_ID), null)
      })

      it('findUser prefers the user with that id over a user with that username', async () => {
        await loadDocument(store, { users: [{ id: uuid('a0000000', 0xaa), username: users.bob.id }] })
        assert.equal((await store.findUser(users.bob.id))?.username, 'bob')
        assert.equal((await store.findUser(uuid('a0000000', 0xaa)))?.username, users.bob.id)
      })

      it('listUsers lists every user ordered by username', async () => {
        const list = await store.listUsers()
        const names = list.map((u) => u.username)
        assert.deepEqual(names, [...names].sort(compareCodePoints))
        for (const u of Object.values(users)) assert.ok(names.includes(u.username), u.username)
        assert.equal(list.length, await store.countUsers())
      })

      it('countUsers counts the users', async () => {
        const before = await store.countUsers()
        assert.ok(before >= Object.keys(users).length)
        await loadDocument(store, { users: [{ username: 'counted' }] })
        assert.equal(await store.countUsers(), before + 1)
      })

      it('setUserFrozen freezes and thaws; false for an unknown user', async () => {
        const id = users.erin.id
        assert.equal(await store.setUserFrozen(id, true, NOW), true)
        assert.equal((await store.findSessionUser(sessions.erinLive.id, NOW))?.is_suspended, true)
        assert.equal((await store.findUser(id))?.is_suspended, true)
        assert.equal(await store.setUserFrozen(id, false, NOW + 1), true)
        assert.equal((await store.findSessionUser(sessions.erinLive.id, NOW))?.is_suspended, false)
        assert.equal(await store.setUserFrozen(UNKNOWN_ID, true, NOW), false)
      })

      it('deleteSession ends a session once; false for an unknown session', async () => {
        const id = sessions.aliceRevocable.id
        assert.equal((await store.findSessionUser(id, NOW))?.id, users.alice.id)
        assert.equal(await store.deleteSession(id), true)
        assert.equal(await store.findSessionUser(id, NOW), null)
        assert.equal(await store.deleteSession(id), false)
        assert.equal(await store.deleteSession(UNKNOWN_ID), false)
        // other sessions of the same user are untouched
        assert.equal((await store.findSessionUser(sessions.aliceLive.id, NOW))?.id, users.alice.id)
      })

      it('findFolder returns deleted folders too, with every stored field', async () => {
        assert.deepEqual(await store.findFolder(folders.deletedRoot.id), {
          ...toRow(folders.deletedRoot),
          owner_id: users.alice.id,
          is_deleted: true,
        })
        assert.deepEqual(await store.findFolder(folders.level1.id), {
          ...toRow(folders.level1),
          owner_id: users.alice.id,
          is_deleted: false,
        })
        assert.equal(await store.findFolder(UNKNOWN_ID), null)
      })

      it('markFolderDeleted hides the folder and its listing; false when not live', async () => {
        const target = folders.volatileA
        assert.equal(await store.markFolderDeleted(target.id, NOW), true)
        const found = await store.findFolder(target.id)
        assert.equal(found?.is_deleted, true)
        const listed = await store.listFolders({
          ownerId: users.alice.id,
          parentId: folders.volatile.id,
          page: 1,
          limit: 50,
        })
        assertRows(listed?.folders ?? [], [toRow(folders.volatileB)])
        assert.equal(listed?.total, 1)
        assert.equal(
          await store.listFolders({ ownerId: users.alice.id, parentId: target.id, page: 1, limit: 50 }),
          null,
        )
        assert.equal(await store.markFolderDeleted(target.id, NOW), false)
        assert.equal(await store.markFolderDeleted(folders.deletedRoot.id, NOW), false)
        assert.equal(await store.markFolderDeleted(UNKNOWN_ID, NOW), false)
      })

      it('listLiveFolders lists every live folder of the user at any depth, ordered within a parent', async () => {
        const live = await store.listLiveFolders(users.bob.id)
        assert.deepEqual(
          live.map((f) => f.id).sort(),
          expectedLiveFolders(users.bob.id)
            .map((f) => f.id)
            .sort(),
        )
        for (const f of live) {
          assert.equal(f.owner_id, users.bob.id)
          assert.equal(f.is_deleted, false)
        }
        const aliceLive = await store.listLiveFolders(users.alice.id)
        const ids = new Set(aliceLive.map((f) => f.id))
        for (const f of allFolders) {
          if (f.owner_id !== users.alice.id) assert.ok(!ids.has(f.id), `foreign ${f.id}`)
          else if (f.is_deleted) assert.ok(!ids.has(f.id), `deleted ${f.name}`)
        }
        assert.ok(ids.has(folders.level2.id) && ids.has(folders.orphan.id), 'any depth')
        // within one parent, the listFolders order
        const inBig = aliceLive.filter((f) => f.folder_id === folders.big.id).map((f) => f.id)
        assert.deepEqual(
          inBig,
          expectedChildren(users.alice.id, folders.big.id).map((f) => f.id),
        )
      })

      it('ping resolves', async () => {
        await store.ping()
      })
    })

    it('close is safe to call twice', async () => {
      // a second store over the same database: cheaper than a fresh database
      const other = await openStore({ ...TEST_SETTINGS, ...backend.settings, databaseUrl: opened?.url ?? '' })
      await other.ping()
      await other.close()
      await other.close()
      await store.ping()
    })
  })
}
