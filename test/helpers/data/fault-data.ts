import { randomBytes } from 'node:crypto'
import { validateImport } from '../../../src/import/validate-import.js'
import { openStore } from '../../../src/store/open-store.js'
import type { ImportCounts } from '../../../src/store/store.js'
import { TEST_SETTINGS } from '../databases/backends.js'

/**
 * A small data set for the fault and soak runs: a few users with live sessions, a root of
 * folders and a few sub-folders each, plus what the load may ask for, expected or not
 * (another user's folder: 404; an unknown session: 401).
 */

export interface FaultData {
  doc: { users: object[]; sessions: object[]; folders: object[] }
  /** live sessions, one per user */
  sessions: string[]
  /** per user: folder ids that have children */
  parents: string[][]
  /** folders per parent (and at each root) */
  perParent: number
}

export function faultData(users = 3, perParent = 30): FaultData {
  const p = randomBytes(4).toString('hex')
  const id = (kind: string, n: number) => `${p}-0000-4000-${kind}-${n.toString(16).padStart(12, '0')}`
  const doc: FaultData['doc'] = { users: [], sessions: [], folders: [] }
  const sessions: string[] = []
  const parents: string[][] = []
  let f = 0
  for (let u = 0; u < users; u++) {
    const userId = id('8000', u)
    doc.users.push({ id: userId, username: `load-${p}-${u}`, email: `u${u}@private.example` })
    sessions.push(id('9000', u))
    doc.sessions.push({ id: id('9000', u), user_id: userId, expires_at: null })
    const own: string[] = []
    for (let i = 0; i < perParent; i++) {
      const folderId = id('a000', f++)
      doc.folders.push({ id: folderId, name: `Folder ${i % 7} ${u}`, folder_id: null, owner_id: userId })
      if (i < 3) own.push(folderId)
    }
    for (const parent of own) {
      for (let i = 0; i < perParent; i++) {
        doc.folders.push({ id: id('a000', f++), name: `child ${i}`, folder_id: parent, owner_id: userId })
      }
    }
    parents.push(own)
  }
  return { doc, sessions, parents, perParent }
}

/** Imports the data set into the database at `url` (migrating it first). */
export async function seed(url: string, data: FaultData): Promise<ImportCounts> {
  const store = await openStore({ ...TEST_SETTINGS, databaseUrl: url })
  try {
    return await store.importData(validateImport(data.doc, Date.now()))
  } finally {
    await store.close()
  }
}

/** A listing path of user `u`: root or one of its parents, page 1 or 2, limit 10 to 30. */
export function ownPath(data: FaultData, u: number, n: number): string {
  const parents = data.parents[u % data.parents.length] ?? []
  const parent = n % 4 === 0 ? undefined : parents[n % parents.length]
  const query = [`limit=${10 + (n % 3) * 10}`, `page=${1 + (n % 2)}`]
  if (parent !== undefined) query.push(`folder_id=${parent}`)
  return `/v1/folders?${query.join('&')}`
}
