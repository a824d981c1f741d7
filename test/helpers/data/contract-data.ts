import type { ImportFileData } from '../../../src/import/import-schema.js'
import { validateImport } from '../../../src/import/validate-import.js'
import type { FolderRow, ImportCounts, Store } from '../../../src/store/store.js'
import { compareCodePoints } from '../../../src/ordering/code-points.js'
import type { Backend } from '../databases/backends.js'
import { hashedUuid, uuid } from './ids.js'
import { appFor, type TestApp } from '../apps/test-app.js'

/**
 * The contract data set, for the contract suites (Store and HTTP): users, sessions, a
 * folder tree and files, written as an import document (docs/api.md "Import format") and
 * loaded through validateImport + Store.importData, plus the expected answers computed from
 * it independently of any backend.
 */

/** The instant the store suites pass as `now`; HTTP tests run at the real clock. */
export const NOW = Date.parse('2026-03-01T12:00:00.000Z')

/** A session that expires exactly here: live at BOUNDARY - 1, expired at BOUNDARY. */
export const BOUNDARY = Date.parse('2026-06-01T00:00:00.000Z')

const FAR_FUTURE = '2100-01-01T00:00:00.000Z'
const PAST = '2020-01-01T00:00:00.000Z'

/** docs/api.md "Order": name (code point), then created_at, then id. */
export function compareFolders(a: FixtureFolder, b: FixtureFolder): number {
  return (
    compareCodePoints(a.name, b.name) ||
    a.created_at - b.created_at ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  )
}

export interface FixtureUser {
  id: string
  username: string
  email: string | null
  avatar_url: string | null
  password_hash: string | null
  is_suspended: boolean
  created_at: number
  updated_at: number
}

export interface FixtureFolder {
  id: string
  /** the stored (trimmed) name */
  name: string
  /** the name as written in the import document */
  rawName: string
  folder_id: string | null
  owner_id: string
  is_deleted: boolean
  created_at: number
  updated_at: number
}

export interface FixtureFile {
  id: string
  name: string
  folder_id: string | null
  owner_id: string
  size: number
}

export interface FixtureSession {
  id: string
  user_id: string
  expires_at: string | null
}

const iso = (ms: number): string => new Date(ms).toISOString()
const day = (d: number, extraMs = 0): number =>
  Date.parse('2026-01-01T00:00:00.000Z') + d * 86_400_000 + extraMs

function user(n: number, username: string, extra: Partial<FixtureUser> = {}): FixtureUser {
  return {
    id: uuid('a0000000', n),
    username,
    email: `${username}.private-mail@example.org`,
    avatar_url: `https://cdn.example.org/avatars/${username}.png`,
    password_hash: `$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$${username}SecretHashValue`,
    is_suspended: false,
    created_at: day(-30, 123),
    updated_at: day(-20, 456),
    ...extra,
  }
}

export const users = {
  alice: user(1, 'alice'),
  bob: user(2, 'bob'),
  carol: user(3, 'carol', { is_suspended: true }),
  dave: user(4, 'dave', { avatar_url: null }),
  /** has a live session and nothing else; the auth suite removes the user behind its back */
  ghost: user(5, 'ghost'),
  /** frozen and thawed by the auth suite */
  erin: user(6, 'erin'),
  /** has no folders at all */
  empty: user(7, 'empty', { email: null, password_hash: null }),
}

export const sessions = {
  aliceLive: { id: uuid('5e550000', 1), user_id: users.alice.id, expires_at: FAR_FUTURE },
  aliceNever: { id: uuid('5e550000', 2), user_id: users.alice.id, expires_at: null },
  aliceExpired: { id: uuid('5e550000', 3), user_id: users.alice.id, expires_at: PAST },
  /** revoked by the auth suite */
  aliceRevocable: { id: uuid('5e550000', 4), user_id: users.alice.id, expires_at: FAR_FUTURE },
  aliceBoundary: { id: uuid('5e550000', 5), user_id: users.alice.id, expires_at: iso(BOUNDARY) },
  bobLive: { id: uuid('5e550000', 11), user_id: users.bob.id, expires_at: FAR_FUTURE },
  carolLive: { id: uuid('5e550000', 21), user_id: users.carol.id, expires_at: FAR_FUTURE },
  carolExpired: { id: uuid('5e550000', 22), user_id: users.carol.id, expires_at: PAST },
  daveLive: { id: uuid('5e550000', 31), user_id: users.dave.id, expires_at: null },
  ghostLive: { id: uuid('5e550000', 41), user_id: users.ghost.id, expires_at: FAR_FUTURE },
  erinLive: { id: uuid('5e550000', 51), user_id: users.erin.id, expires_at: FAR_FUTURE },
  emptyLive: { id: uuid('5e550000', 61), user_id: users.empty.id, expires_at: FAR_FUTURE },
} satisfies Record<string, FixtureSession>

/** A UUID that no record of the data set uses. */
export const UNKNOWN_ID = uuid('deadbeef', 0xdead)

const folderList: FixtureFolder[] = []

function folder(
  id: string,
  rawName: string,
  owner: FixtureUser,
  parent: string | null,
  created_at: number,
  is_deleted = false,
): FixtureFolder {
  const f: FixtureFolder = {
    id,
    name: rawName.trim(),
    rawName,
    folder_id: parent,
    owner_id: owner.id,
    is_deleted,
    created_at,
    updated_at: created_at + 1001,
  }
  folderList.push(f)
  return f
}

const F = (n: number) => uuid('f0000000', n)
const { alice, bob, carol, dave, erin } = users

/** Named folders the suites refer to. */
export const folders = {
  // alice, root: code point order differs from JS default sort and from locale order
  zeta: folder(F(1), 'Zeta', alice, null, day(1)),
  zetaLower: folder(F(2), 'zeta', alice, null, day(1)),
  alpha: folder(F(3), 'alpha', alice, null, day(2)),
  gamma: folder(F(4), 'Gamma', alice, null, day(3)),
  emile: folder(F(5), 'Émile', alice, null, day(4)),
  emileDecomposed: folder(F(6), 'E\u0301mile', alice, null, day(4)),
  smile: folder(F(7), '😀 smile', alice, null, day(5)),
  fullwidth: folder(F(8), '\uFF21 fullwidth', alice, null, day(5)),
  ten: folder(F(9), '10 ten', alice, null, day(6)),
  nine: folder(F(10), '9 nine', alice, null, day(6)),
  lowerA: folder(F(11), 'a', alice, null, day(7)),
  upperB: folder(F(12), 'B', alice, null, day(7)),
  padded: folder(F(13), '  Padded  ', alice, null, day(8)),
  // same name: the newest first in the file, the two oldest share created_at (id decides)
  docsNewest: folder(F(0x30), 'Docs', alice, null, day(10, 5)),
  docsOldHighId: folder(F(0x32), 'Docs', alice, null, day(9, 7)),
  docsOldLowId: folder(F(0x31), 'Docs', alice, null, day(9, 7)),
  big: folder(F(0x40), 'Big', alice, null, day(11)),
  nested: folder(F(0x50), 'Nested', alice, null, day(12)),
  level1: folder(F(0x51), 'Level1', alice, F(0x50), day(12, 1)),
  level2: folder(F(0x52), 'Level2', alice, F(0x51), day(12, 2)),
  volatile: folder(F(0x53), 'Volatile', alice, F(0x50), day(12, 3)),
  volatileA: folder(F(0x54), 'v-a', alice, F(0x53), day(12, 4)),
  volatileB: folder(F(0x55), 'v-b', alice, F(0x53), day(12, 5)),
  // a deleted folder at the root, with a live child of its own
  deletedRoot: folder(F(0x60), 'Deleted root', alice, null, day(13), true),
  orphan: folder(F(0x61), 'Orphan child', alice, F(0x60), day(13, 1)),
  // a deleted child in a live parent
  deletedInNested: folder(F(0x62), 'Level0 deleted', alice, F(0x50), day(13, 2), true),
  // bob: same names as alice, at the root and below
  bobAlpha: folder(F(0x100), 'alpha', bob, null, day(2)),
  bobPrivate: folder(F(0x101), 'Bob private', bob, null, day(3)),
  bobChild: folder(F(0x102), 'Docs', bob, F(0x101), day(4)),
  bobDeleted: folder(F(0x103), 'Bob deleted', bob, null, day(5), true),
  carolFolder: folder(F(0x200), 'carol folder', carol, null, day(1)),
  daveFolder: folder(F(0x300), 'dave-only', dave, null, day(1)),
  erinFolder: folder(F(0x400), 'erin folder', erin, null, day(1)),
}

/** Names of Big's children: repeats, case, digits, accents, CJK, astral characters. */
const BIG_NAMES = [
  'report',
  'Report',
  'REPORT',
  'report 2',
  'report10',
  'report9',
  'Ärger',
  'arger',
  'Zebra',
  'zebra',
  'ß',
  'ss',
  '日本',
  '中文',
  '😀',
  '😀😀',
  '\uFF21',
  '\uFFFD',
  '𝔘nicode',
  'Ω',
  '_under',
  '-dash',
  '~tilde',
  '.dot',
  '0',
  '00',
  'a b',
  'a-b',
  'ab',
  'x',
]

export const BIG_LIVE_CHILDREN = 230
const BIG_DELETED_CHILDREN = 12

for (let i = 0; i < BIG_LIVE_CHILDREN + BIG_DELETED_CHILDREN; i++) {
  const name = BIG_NAMES[(i * 7) % BIG_NAMES.length] ?? 'x'
  // few distinct instants, so many same-name siblings share created_at and id decides
  const created = day(20, ((i * 13) % 5) * 1000 + ((i * 3) % 2))
  folder(hashedUuid(`big-${i}`), name, alice, folders.big.id, created, i >= BIG_LIVE_CHILDREN)
}

export const allFolders: readonly FixtureFolder[] = folderList

export const files: FixtureFile[] = [
  { id: uuid('f11e0000', 1), name: 'alpha', folder_id: null, owner_id: alice.id, size: 10 },
  { id: uuid('f11e0000', 2), name: 'Zeta.txt', folder_id: null, owner_id: alice.id, size: 20 },
  { id: uuid('f11e0000', 3), name: 'in-big.bin', folder_id: folders.big.id, owner_id: alice.id, size: 30 },
  { id: uuid('f11e0000', 4), name: 'in-nested', folder_id: folders.nested.id, owner_id: alice.id, size: 0 },
  { id: uuid('f11e0000', 5), name: 'bob.txt', folder_id: null, owner_id: bob.id, size: 1 },
]

/** The import document of the whole data set (docs/api.md "Import format"). */
export function datasetDocument(): ImportFileData {
  return {
    users: Object.values(users).map((u) => ({
      id: u.id,
      username: u.username,
      email: u.email,
      avatar_url: u.avatar_url,
      password_hash: u.password_hash,
      is_suspended: u.is_suspended,
      created_at: iso(u.created_at),
      updated_at: iso(u.updated_at),
    })),
    sessions: Object.values(sessions).map((s) => ({ ...s })),
    // children before some parents on purpose: the file may list them in any order
    folders: [...allFolders].reverse().map((f) => ({
      id: f.id,
      name: f.rawName,
      folder_id: f.folder_id,
      owner_id: f.owner_id,
      is_deleted: f.is_deleted,
      created_at: iso(f.created_at),
      updated_at: iso(f.updated_at),
    })),
    files: files.map((f) => ({ ...f, is_deleted: false })),
  }
}

/** Loads an import document into a store the way `folder-service import` does. */
export async function loadDocument(store: Store, doc: unknown, now = NOW): Promise<ImportCounts> {
  return store.importData(validateImport(doc, now))
}

export async function loadDataset(store: Store): Promise<ImportCounts> {
  return loadDocument(store, datasetDocument())
}

/** The live children of `parentId` (null: root) owned by `ownerId`, in contract order. */
export function expectedChildren(ownerId: string, parentId: string | null): FixtureFolder[] {
  return allFolders
    .filter((f) => f.owner_id === ownerId && f.folder_id === parentId && !f.is_deleted)
    .sort(compareFolders)
}

/** Every live folder of a user, any depth. */
export function expectedLiveFolders(ownerId: string): FixtureFolder[] {
  return allFolders.filter((f) => f.owner_id === ownerId && !f.is_deleted)
}

/** The Store's view of a fixture folder. */
export function toRow(f: FixtureFolder): FolderRow {
  return {
    id: f.id,
    name: f.name,
    folder_id: f.folder_id,
    created_at: f.created_at,
    updated_at: f.updated_at,
  }
}

/** The HTTP body of a fixture folder (docs/api.md "200 body" and "Headers of a 200"). */
export function toBody(f: FixtureFolder) {
  const owner = Object.values(users).find((u) => u.id === f.owner_id)
  if (owner === undefined) throw new Error(`fixture folder ${f.id} has no owner`)
  return {
    id: f.id,
    name: f.name,
    folder_id: f.folder_id,
    owner: { id: owner.id, username: owner.username, avatar_url: owner.avatar_url },
    created_at: iso(f.created_at),
    updated_at: iso(f.updated_at),
  }
}

/** appFor with the whole data set loaded. */
export async function seededApp(backend: Backend): Promise<TestApp> {
  const t = await appFor(backend)
  try {
    await loadDataset(t.store)
  } catch (error) {
    await t.close()
    throw error
  }
  return t
}
