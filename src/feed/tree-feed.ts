import { toFolderBody } from '../schemas/folder-body.js'
import type { DeploymentSealers } from '../tokens/token-sealers.js'
import type { FolderTreeBody, TreeEntry } from '../schemas/tree-body.js'
import type { TreeQueryString } from '../schemas/tree-query.js'
import {
  ALL_ROWS,
  type ChangePosition,
  type TreePageResult,
  type FolderRow,
  type OwnerInfo,
  type ServingStore,
  type SessionUser,
} from '../store/store.js'
import { feedFolderId, feedRequest, HeldFeed, type FeedOutcome, type FeedRequest } from './feed.js'
import type { HeldRead } from './held-request.js'
import { treeBinding, type Expansion, type TreeCursor, type TreeCursors } from '../tokens/tree-cursor.js'
import type { ChangeWatcher } from './watcher.js'

/**
 * The folder tree feed (docs/api.md "Folder tree"), knowing nothing of HTTP. One cursor
 * first sends the tree (a subtree read in a pre-order walk, so parents first:
 * src/store/tree-walk.ts, which also argues why moves between pages lose nothing), then the
 * owner's log after the position where the download began, row by row in commit order: a
 * folder now in the tree becomes an upsert, one not in it a remove of it and its subtree,
 * and a folder that came to a new place and is in the tree (moved, undeleted, given to the
 * user) has its whole subtree sent again the same way as the download, since the client may
 * hold none of it. "In it" is as of the row: a folder reached now only through a later move
 * of an ancestor counts as out of it until that row (Store.readTreeLog). A folder or an
 * ancestor moved while a subtree was being read is logged after the position the read
 * began at, so the follow sends it again.
 *
 * Each answer is a faithful prefix of that sequence: it ends before a folder would appear a
 * second time (from another generation), so every entry may be applied in order.
 */

/** What a tree request asks for, after validation (a null cursor: a new download). */
export interface TreeRequest extends FeedRequest {
  /** null: the user's root */
  rootId: string | null
}

export function treeRequest({ root, ...query }: TreeQueryString): TreeRequest {
  return { rootId: feedFolderId(root), ...feedRequest(query) }
}

export type TreeOutcome = FeedOutcome<FolderTreeBody>

/** An answer's entries by folder id ('owner' for the owner), each with the generation it came from. */
type Entries = Map<string, { entry: TreeEntry; generation: number }>

/** Entries sent as part of a subtree: any log row of the same folder ends the answer. */
const SUBTREE_GENERATION = -1

/**
 * Reads per answer at most: a log of rows that add no entry (repeated username changes)
 * ends the answer with has_more rather than reading on within one request.
 */
const MAX_READS = 16

type Read =
  | { outcome: 'parent-not-found' }
  | { outcome: 'expired' }
  | { outcome: 'read'; body: FolderTreeBody; idle: boolean; present: ChangePosition }

export class TreeFeed extends HeldFeed<TreeRequest, FolderTreeBody> {
  constructor(
    private readonly store: Pick<ServingStore, 'readTreePage' | 'readTreeLog'>,
    private readonly sealers: DeploymentSealers,
    watcher: ChangeWatcher,
  ) {
    super(watcher)
  }

  /** The reads of `user`'s tree below `request.rootId`. */
  protected async heldRead(
    user: SessionUser,
    request: TreeRequest,
    readOnce: boolean,
  ): Promise<HeldRead<TreeOutcome> | { outcome: 'expired' } | { outcome: 'cursor-invalid' }> {
    const { rootId, cursor, limit } = request
    const cursors = (await this.sealers.get()).tree
    const binding = treeBinding(user.id, rootId)
    let from: TreeCursor | null = null
    if (cursor !== null) {
      const opened = cursors.open(cursor, binding)
      if (opened === 'expired') return { outcome: 'expired' }
      if (opened === null) return { outcome: 'cursor-invalid' }
      from = opened
    }
    const start = from
    const caughtUp =
      start !== null &&
      start.expansion === null &&
      start.position.generation === user.generation &&
      start.position.row === ALL_ROWS
    return {
      user,
      readOnce,
      parkedAt: caughtUp ? user.generation : null,
      read: async (minGeneration) => {
        const read = await this.read(user.id, rootId, start, limit, minGeneration, cursors, binding)
        if (read.outcome !== 'read') return { send: read }
        if (!read.idle || readOnce) return { send: { outcome: 'answer', body: read.body } }
        return { nothing: read.present.generation }
      },
      unchanged: { outcome: 'answer', body: { changes: [], cursor: cursor ?? '', has_more: false } },
    }
  }

  /** One answer from `start` (null: a new download), at most `limit` entries. */
  private async read(
    ownerId: string,
    rootId: string | null,
    start: TreeCursor | null,
    limit: number,
    minGeneration: number,
    cursors: TreeCursors,
    binding: string,
  ): Promise<Read> {
    const tree = { ownerId, rootId, minGeneration }
    const entries: Entries = new Map()
    let position = start?.position ?? null
    let expansion: Expansion | null = start === null ? { top: null, after: null } : start.expansion
    let owner: OwnerInfo | null = null
    let idle = start !== null

    const finish = (more: boolean, present: ChangePosition | null): Read => {
      const changes = [...entries.values()].map(({ entry }) =>
        entry.type === 'owner' && owner !== null ? { type: 'owner' as const, owner } : entry,
      )
      const at = present ?? position
      // Unreachable: a download's first page sets the position before anything can finish.
      if (at === null) throw new Error('a tree answer without a log position')
      return {
        outcome: 'read',
        body: { changes, cursor: cursors.seal({ position: at, expansion }, binding), has_more: more },
        idle: idle && changes.length === 0,
        present: at,
      }
    }

    for (let reads = 0; reads < MAX_READS; reads++) {
      const budget = limit - entries.size
      if (budget <= 0) {
        if (expansion !== null || position === null) return finish(true, null)
        // Full, between a subtree's end and the log: has_more only when the log has more, so
        // a client at the present is told so now, not after a wait.
        const peek = await this.store.readTreeLog({ ...tree, after: position, limit: 1 })
        if (peek.outcome !== 'log') return peek
        return finish(peek.rows.length > 0, null)
      }
      if (expansion !== null) {
        // At most once per answer: a page that reaches a folder this answer already holds is
        // read again up to the folder before it, so the cursor is that folder's path, and
        // the rest of the subtree comes in the next answer.
        let want = budget
        let page: TreePageResult
        let cut: number
        for (;;) {
          page = await this.store.readTreePage({
            ...tree,
            subtreeOf: expansion.top,
            after: expansion.after,
            limit: want,
          })
          if (page.outcome !== 'page') return page
          // A download begins at the position read with its first page: whatever changes
          // after it is logged after it.
          position ??= page.present
          cut = page.folders.findIndex((folder) => entries.has(folder.id))
          if (cut === -1 || cut === 0) break
          want = cut
        }
        owner = page.owner
        idle = false
        if (cut === 0) return finish(true, null)
        for (const folder of page.folders) {
          entries.set(folder.id, { entry: upsert(folder, page.owner), generation: SUBTREE_GENERATION })
        }
        expansion.after = page.last
        if (page.more) return finish(true, null)
        expansion = null
        continue
      }
      const log = await this.store.readTreeLog({ ...tree, after: position as ChangePosition, limit: budget })
      if (log.outcome !== 'log') return log
      owner = log.owner
      for (const row of log.rows) {
        if (row.kind === 'folder' && row.id === rootId) {
          // The root is not in its own tree: a change of its own row sends nothing (its
          // deletion or its leaving the user ends the follow with 404 instead).
          position = row.position
          continue
        }
        const key = row.kind === 'owner' ? 'owner' : row.id
        const held = entries.get(key)
        if (row.kind === 'owner') {
          // One owner entry, filled with the owner as last read (see finish).
          if (held === undefined) {
            entries.set(key, {
              entry: { type: 'owner', owner: log.owner },
              generation: row.position.generation,
            })
          }
        } else if (held === undefined) {
          entries.set(key, { entry: entryOf(row, log.owner), generation: row.position.generation })
        } else if (held.generation !== row.position.generation) {
          return finish(true, null)
        } else {
          refine(held.entry, row)
        }
        position = row.position
        idle = false
        if (row.kind === 'folder' && row.side === 1 && row.folder !== null) {
          // It came to a new place in the tree: the client may hold none of its subtree.
          expansion = { top: row.id, after: null }
          break
        }
      }
      if (expansion !== null) continue
      if (log.more) continue
      return finish(false, log.present)
    }
    return finish(true, null)
  }
}

function upsert(folder: FolderRow, owner: OwnerInfo): TreeEntry {
  return { type: 'upsert', folder: toFolderBody(folder, owner) }
}

/** A folder's entry at its first log row in an answer: its state now, in or out of the tree. */
function entryOf(
  row: { id: string; parentId: string | null; side: 0 | 1; folder: FolderRow | null },
  owner: OwnerInfo,
): TreeEntry {
  if (row.folder === null) return { type: 'remove', id: row.id, folder_id: row.parentId }
  const entry = upsert(row.folder, owner)
  refine(entry, row)
  return entry
}

/**
 * What another row of the same generation adds: an old-state row (side 0) gives the parent
 * the folder had before the change, which a remove names and a moved upsert carries as
 * previous_folder_id.
 */
function refine(entry: TreeEntry, row: { parentId: string | null; side: 0 | 1 }): void {
  if (row.side !== 0) return
  if (entry.type === 'remove') entry.folder_id = row.parentId
  else if (
    entry.type === 'upsert' &&
    entry.previous_folder_id === undefined &&
    row.parentId !== entry.folder.folder_id
  )
    entry.previous_folder_id = row.parentId
}
