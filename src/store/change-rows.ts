import { ALL_ROWS, type ChangeRow, type ChangesResult, type FolderRow, type OwnerInfo } from './store.js'

/**
 * What both adapters read for Store.readChanges, and the one place that turns it into a
 * ChangesResult: the adapters differ in SQL only.
 */

/** A log row as read (limit + 1 of them at most), with its folder's state when it is listed. */
export type LoggedChange =
  | { kind: 'owner'; id: number; generation: number }
  | {
      kind: 'folder'
      id: number
      generation: number
      folderId: string
      /** the folder as listed under the followed parent now; null: it is not listed there */
      folder: FolderRow | null
    }

/** `read` holds at most limit + 1 rows, in (generation, id) order; the extra one only says `more`. */
export function changesResult(
  read: readonly LoggedChange[],
  limit: number,
  owner: OwnerInfo,
  generation: number,
): ChangesResult {
  const more = read.length > limit
  const rows = read.slice(0, limit).map((change): ChangeRow => {
    const position = { generation: change.generation, row: change.id }
    return change.kind === 'owner'
      ? { kind: 'owner', position }
      : { kind: 'folder', position, id: change.folderId, folder: change.folder }
  })
  return { outcome: 'changes', rows, more, owner, present: { generation, row: ALL_ROWS } }
}
