import type { Folder, TreeEntry } from '../../../src/client/index.js'

/** Folders and tree feed entries (docs/api.md "The folder tree") for scripted tree feeds. */

export const TREE_OWNER = { id: 'a0000000-0000-4000-8000-000000000001', username: 'owner', avatar_url: null }
const AT = '2026-01-01T00:00:00.000Z'

/** The folder id numbered `n`. */
export const fid = (n: number) => `f0000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`

/** Folder `n` named `name` under `parent` (null: the user's root). */
export const folder = (n: number, name: string, parent: string | null): Folder => ({
  id: fid(n),
  name,
  folder_id: parent,
  owner: TREE_OWNER,
  created_at: AT,
  updated_at: AT,
})

/** An upsert; `previous` is its previous_folder_id (a move), absent when not given. */
export const upsert = (f: Folder, previous?: string | null): TreeEntry =>
  previous === undefined
    ? { type: 'upsert', folder: f }
    : { type: 'upsert', folder: f, previous_folder_id: previous }
