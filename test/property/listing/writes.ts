import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import type { Store } from '../../../src/store/store.js'
import { insertLiveFolder, type RawSql } from '../../../harness/raw-sql.js'
import type { ModelFolder, ModelUser } from '../../helpers/fixtures/model.js'
import type { CheckStats } from './check.js'
import type { Concrete } from './data.js'
import type { GenAction, GenRawWrite } from './generators.js'

/** The writes between requests: through the Store or plain SQL, each mirrored in the model. */

/** A property run's database: the app's store, and a second connection for plain SQL. */
export interface TargetDb {
  store: Store
  sql: RawSql
}

/** Applies a write through the Store (or plain SQL) and to the model; checks the Store's own answer. */
export async function applyAction(
  db: TargetDb,
  c: Concrete,
  action: GenAction,
  stats: CheckStats,
): Promise<void> {
  const { store } = db
  const now = Date.now()
  const pick = <T>(items: T[]): T | undefined => items[action.pick % Math.max(items.length, 1)]
  switch (action.kind) {
    case 'rawInsert':
    case 'rawRename':
    case 'rawMove':
    case 'rawDelete':
    case 'rawUndelete':
    case 'rawRenameUser':
      if (!(await applyRawWrite(db.sql, c, action))) return
      break
    case 'deleteFolder': {
      const id = pick(c.folderIds)
      if (id === undefined) return
      const folder = c.model.folders.get(id) as ModelFolder
      const changed = await store.markFolderDeleted(id, now)
      assert.equal(
        changed,
        !folder.is_deleted,
        `markFolderDeleted(${id}) on a folder with is_deleted=${folder.is_deleted}`,
      )
      if (changed) c.model.folders.set(id, { ...folder, is_deleted: true, updated_at: now })
      break
    }
    case 'freeze':
    case 'unfreeze': {
      const id = pick(c.userIds) as string
      assert.equal(await store.setUserFrozen(id, action.kind === 'freeze', now), true)
      const user = c.model.users.get(id) as ModelUser
      c.model.users.set(id, { ...user, is_suspended: action.kind === 'freeze' })
      break
    }
    case 'revokeSession': {
      const id = pick(c.sessionIds) as string
      assert.equal(await store.deleteSession(id), c.model.sessions.has(id), `deleteSession(${id})`)
      c.model.sessions.delete(id)
      break
    }
  }
  stats.writes++
}

/** Names a raw write may give: they sort apart by code point, case and composition. */
const RAW_NAMES = ['new', 'New', 'Docs', 'zz top', '😀 raw', 'E\u0301mile', 'Émile', 'a']

/**
 * Applies one plain-SQL write and mirrors it in the model; false when the data set has
 * nothing it could apply to. Each statement is its own transaction, as another service's
 * would be; parents stay within one owner (the schema's same-owner rule).
 */
async function applyRawWrite(sql: RawSql, c: Concrete, w: GenRawWrite): Promise<boolean> {
  const folders = c.model.folders
  const at = <T>(items: T[], n: number): T | undefined => items[n % Math.max(items.length, 1)]
  const ownFolders = (owner: string) => c.folderIds.filter((id) => folders.get(id)?.owner_id === owner)
  switch (w.kind) {
    case 'rawInsert': {
      const owner = at(c.userIds, w.pick) as string
      const parent = w.parentPick === null ? null : (at(ownFolders(owner), w.parentPick) ?? null)
      const id = randomUUID()
      const name = at(RAW_NAMES, w.namePick) as string
      const now = Date.now()
      await insertLiveFolder(sql, { id, name, parent, owner, at: now })
      folders.set(id, {
        id,
        name,
        folder_id: parent,
        owner_id: owner,
        is_deleted: false,
        created_at: now,
        updated_at: now,
      })
      c.folderIds.push(id)
      return true
    }
    case 'rawRename':
    case 'rawMove':
    case 'rawDelete':
    case 'rawUndelete': {
      const id = at(c.folderIds, w.pick)
      if (id === undefined) return false
      const folder = folders.get(id) as ModelFolder
      if (w.kind === 'rawRename') {
        const name = at(RAW_NAMES, w.namePick) as string
        await sql.run('UPDATE folders SET name = ? WHERE id = ?', name, id)
        folders.set(id, { ...folder, name })
      } else if (w.kind === 'rawMove') {
        const candidates = ownFolders(folder.owner_id).filter((other) => other !== id)
        const parent = w.parentPick === null ? null : (at(candidates, w.parentPick) ?? null)
        await sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', parent, id)
        folders.set(id, { ...folder, folder_id: parent })
      } else {
        const deleted = w.kind === 'rawDelete'
        await sql.run(`UPDATE folders SET is_deleted = ${deleted ? sql.true : sql.false} WHERE id = ?`, id)
        folders.set(id, { ...folder, is_deleted: deleted })
      }
      return true
    }
    case 'rawRenameUser': {
      const id = at(c.userIds, w.pick) as string
      const username = `renamed-${randomUUID().slice(0, 8)}`
      await sql.run('UPDATE users SET username = ? WHERE id = ?', username, id)
      c.model.users.set(id, { ...(c.model.users.get(id) as ModelUser), username })
      return true
    }
  }
}
