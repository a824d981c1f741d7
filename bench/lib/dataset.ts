import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { compareCodePoints } from '../../src/ordering/code-points.js'

/**
 * The generated data set, written as an import file (docs/api.md "Import format"), and what the
 * service must answer for it. Names and timestamps come from a seeded generator, so a run
 * is reproducible; ids are fresh UUIDs, so a re-import into a kept database never collides.
 */

export interface DataSetSizes {
  users: number
  rootFolders: number
  smallFolders: number
  huge: number
  seed: number
  /** root folders of each user that hold `smallFolders` children (default 1, at most rootFolders) */
  parents?: number
}

/** A parent folder the bench lists, with its live children in the order the service must return. */
export interface ListedFolder {
  ownerId: string
  sessionId: string
  /** null: the user's root */
  folderId: string | null
  /** live children ids ordered by name (code point), created_at, id */
  sortedIds: string[]
}

export interface DataSet {
  file: string
  bytes: number
  counts: { users: number; sessions: number; folders: number; deletedFolders: number }
  /** one per user: the folder of `smallFolders` children */
  small: (ListedFolder & { folderId: string })[]
  /** one list per user: every folder of `smallFolders` children (`parents` of them), `small` first */
  parents: (ListedFolder & { folderId: string })[][]
  /** one per user: a logically deleted root folder */
  deleted: string[]
  /** one per user: the root, `rootFolders` live folders */
  roots: ListedFolder[]
  /** the folder of `huge` children, or null when --huge 0 */
  huge: ListedFolder | null
  userIds: string[]
}

/** Share of extra, logically deleted siblings: they must never be listed nor counted. */
const DELETED_SHARE = 0.02

const WORDS = [
  'Invoices',
  'invoices',
  'Photos',
  'Projects',
  'alpha',
  'Gamma',
  'Résumés',
  'Zebra',
  'backups',
  'Notes 2024',
  '日本語',
  'Ωmega',
  'straße',
  '😀 Fun',
  'Q3 report',
  'tmp',
  'Archive',
  'ÉTÉ',
  'music',
  'Scans',
]

/** mulberry32: small, fast, good enough to vary names and dates reproducibly. */
export function generator(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** For same-format ISO timestamps and lower-case UUIDs, string order is the stored order. */
function compareAscii(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

interface FolderOut {
  id: string
  name: string
  folder_id: string | null
  owner_id: string
  is_deleted: boolean
  created_at: string
  updated_at: string
}

const BASE_MS = Date.UTC(2024, 0, 1)
const SPAN_MS = 2 * 365 * 24 * 3600 * 1000

export function generateDataSet(file: string, sizes: DataSetSizes): DataSet {
  const random = generator(sizes.seed)
  const pick = (n: number) => Math.floor(random() * n)
  const folders: FolderOut[] = []
  let deletedFolders = 0

  // Each name is a word and a number: siblings share names often enough to exercise the tie-breaks.
  const folderName = (siblings: number) => {
    const name = `${WORDS[pick(WORDS.length)]} ${pick(Math.max(10, siblings))}`
    return random() < 0.01 ? `  ${name} ` : name // import trims names
  }
  const addFolder = (ownerId: string, parentId: string | null, siblings: number, deleted = false) => {
    const created = BASE_MS + pick(SPAN_MS)
    const folder: FolderOut = {
      id: randomUUID(),
      name: folderName(siblings),
      folder_id: parentId,
      owner_id: ownerId,
      is_deleted: deleted,
      created_at: new Date(created).toISOString(),
      updated_at: new Date(created + pick(SPAN_MS / 10)).toISOString(),
    }
    folders.push(folder)
    if (deleted) deletedFolders++
    return folder
  }

  const sortedIds = (live: FolderOut[]) =>
    live
      .sort(
        (a, b) =>
          compareCodePoints(a.name.trim(), b.name.trim()) ||
          compareAscii(a.created_at, b.created_at) ||
          compareAscii(a.id, b.id),
      )
      .map((f) => f.id)

  /** One user's tree: root folders, the first `parents` of which hold `children` live children each. */
  const addTree = (ownerId: string, sessionId: string, children: number, parents: number) => {
    const rootLive: FolderOut[] = []
    for (let i = 0; i < sizes.rootFolders; i++) rootLive.push(addFolder(ownerId, null, sizes.rootFolders))
    const deletedRoot = addFolder(ownerId, null, sizes.rootFolders, true)
    const folders = rootLive.slice(0, Math.max(1, parents)).map((parent) => {
      const live: FolderOut[] = []
      for (let i = 0; i < children; i++) live.push(addFolder(ownerId, parent.id, children))
      for (let i = 0; i < Math.ceil(children * DELETED_SHARE); i++)
        addFolder(ownerId, parent.id, children, true)
      return { ownerId, sessionId, folderId: parent.id, sortedIds: sortedIds(live) }
    })
    return {
      folders,
      root: { ownerId, sessionId, folderId: null, sortedIds: sortedIds(rootLive) },
      deletedId: deletedRoot.id,
    }
  }

  const runTag = randomUUID().slice(0, 8)
  const users = []
  const sessions = []
  const parents: (ListedFolder & { folderId: string })[][] = []
  const deleted: string[] = []
  const roots: ListedFolder[] = []
  let huge: ListedFolder | null = null
  const totalUsers = sizes.users + (sizes.huge > 0 ? 1 : 0)
  for (let u = 0; u < totalUsers; u++) {
    const isHuge = u === sizes.users
    const id = randomUUID()
    const sessionId = randomUUID()
    users.push({
      id,
      username: isHuge ? `bench-${runTag}-huge` : `bench-${runTag}-u${u}`,
      email: `u${u}@bench.invalid`,
      avatar_url: u % 3 === 0 ? null : `https://avatars.bench.invalid/${u}.png`,
      password_hash: 'x',
      is_suspended: false,
    })
    sessions.push({ id: sessionId, user_id: id, expires_at: '2099-01-01T00:00:00.000Z' })
    const tree = isHuge
      ? addTree(id, sessionId, sizes.huge, 1)
      : addTree(id, sessionId, sizes.smallFolders, sizes.parents ?? 1)
    if (isHuge) huge = tree.folders[0] as ListedFolder
    else {
      parents.push(tree.folders)
      roots.push(tree.root)
      deleted.push(tree.deletedId)
    }
  }

  const text = JSON.stringify({ users, sessions, folders })
  writeFileSync(file, text)
  return {
    file,
    bytes: Buffer.byteLength(text),
    counts: { users: users.length, sessions: sessions.length, folders: folders.length, deletedFolders },
    small: parents.map((folders) => folders[0] as ListedFolder & { folderId: string }),
    parents,
    deleted,
    roots,
    huge,
    userIds: users.map((u) => u.id),
  }
}
