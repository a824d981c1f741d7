import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { validateImport } from '../../../src/import/validate-import.js'
import type { Store } from '../../../src/store/store.js'
import { uuid } from './ids.js'
import { insertLiveFolder, type RawSql } from '../../../harness/raw-sql.js'

/**
 * One user with a session and a folder to follow, for the suites that follow a folder's
 * changes over HTTP while writes arrive by raw SQL.
 */

export interface FollowedFolder {
  owner: string
  session: string
  parent: string
}

export interface ChangesJson {
  changes: { type: string; folder?: { id: string; name: string }; id?: string }[]
  cursor: string
  has_more: boolean
}

/** The ids of a followed folder whose UUIDs start with `prefix` (8 hex digits). */
export function followedFolder(prefix: string): FollowedFolder {
  return { owner: uuid(prefix, 1), session: uuid(prefix, 2), parent: uuid(prefix, 3) }
}

/** Imports the user, its session and the folder (plus `extra` sessions and root folders). */
export async function seedFollowed(
  store: Store,
  f: FollowedFolder,
  extra: { sessions?: string[]; folders?: { id: string; name: string }[] } = {},
): Promise<void> {
  await store.importData(
    validateImport(
      {
        users: [{ id: f.owner, username: `follower ${f.owner.slice(0, 8)}` }],
        sessions: [f.session, ...(extra.sessions ?? [])].map((id) => ({ id, user_id: f.owner })),
        folders: [{ id: f.parent, name: 'followed' }, ...(extra.folders ?? [])].map((folder) => ({
          ...folder,
          owner_id: f.owner,
        })),
      },
      Date.now(),
    ),
  )
}

/** GET /v1/folders/changes of the followed folder on `base`, asserted 200. */
export async function changesOf(f: FollowedFolder, base: string, query: string): Promise<ChangesJson> {
  const res = await fetch(`${base}/v1/folders/changes?folder_id=${f.parent}&${query}`, {
    headers: { cookie: `session_id=${f.session}` },
  })
  assert.equal(res.status, 200, await res.clone().text())
  return (await res.json()) as ChangesJson
}

/** Inserts a live child of the followed folder (or of `parent`) by raw SQL; its id. */
export async function insertChild(sql: RawSql, f: FollowedFolder, name: string, parent = f.parent) {
  const id = randomUUID()
  await insertLiveFolder(sql, { id, name, parent, owner: f.owner, at: Date.now() })
  return id
}
