import { toFolderBody } from '../schemas/folder-body.js'
import type { DeploymentSealers } from '../tokens/token-sealers.js'
import type { FolderTreeBody, TreeEntry } from '../schemas/tree-body.js'
import type { TreeQueryString } from '../schemas/tree-query.js'
import {
  ALL_ROWS,
  type ChangePosition,
  type OwnerInfo,
  type ServingStore,
  type SessionUser,
} from '../store/store.js'
import type { AnswerEntry } from '../store/tree-answer.js'
import { cursorAt, feedFolderId, feedRequest, HeldFeed, type FeedOutcome, type FeedRequest } from './feed.js'
import type { HeldRead } from './held-request.js'
import { treeBinding, type TreeCursor, type TreeCursors } from '../tokens/tree-cursor.js'
import { SharedReads } from './shared-reads.js'
import type { ChangeWatcher } from './watcher.js'

/**
 * The folder tree feed (docs/api.md "Folder tree"), knowing nothing of HTTP. Each answer is
 * one Store.readTree from the cursor, in one snapshot: src/store/tree-answer.ts decides its
 * entries from the tree at the cursor's position and the tree at the answer's end, so a
 * download under writes, a folder that comes back with its subtree and a follow that
 * coalesces a backlog all send exactly what the client needs, and nothing for folders it
 * does not hold. Here: the cursor sealed and opened, the entries' bodies, and held requests
 * that keep holding while the log holds nothing for this tree (changes outside it).
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

/**
 * Reads per answer at most: a log of rows that add no entry (changes outside the tree,
 * repeated changes of the root's own row) ends the answer with has_more rather than reading
 * on within one request.
 */
const MAX_READS = 16

type Read =
  | { outcome: 'parent-not-found' }
  | { outcome: 'expired' }
  | { outcome: 'read'; body: FolderTreeBody; idle: boolean; present: ChangePosition; cursor: TreeCursor }

export class TreeFeed extends HeldFeed<TreeRequest, FolderTreeBody> {
  /** Reads shared by the followers one commit wakes (shared-reads.ts). */
  private readonly reading = new SharedReads<Read>()

  constructor(
    private readonly store: Pick<ServingStore, 'readTree'>,
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
    const caughtUp =
      from !== null &&
      from.expansion === null &&
      from.position.generation === user.generation &&
      from.position.row === ALL_ROWS
    // A held request keeps holding while the log holds nothing for this tree: the cursor
    // moves on past those rows (the client's tree did not change), and an answer with no
    // entries is sent only when the wait ends.
    let sealed = cursor ?? ''
    return {
      user,
      readOnce,
      parkedAt: caughtUp ? user.generation : null,
      read: async (minGeneration, woken) => {
        const at = from
        const sent = sealed
        const own = () => this.read(user.id, rootId, { at, sent }, limit, minGeneration, cursors, binding)
        // Followers woken together at the same place in the log (not within a subtree) share one read.
        const read = await (woken && at?.expansion === null
          ? this.reading.share(
              `${user.id} ${rootId ?? ''} ${at.position.generation} ${at.position.row} ${limit} ${minGeneration}`,
              own,
            )
          : own())
        if (read.outcome !== 'read') return { send: read }
        if (!read.idle || readOnce) return { send: { outcome: 'answer', body: read.body } }
        from = read.cursor
        sealed = read.body.cursor
        return { nothing: read.present.generation }
      },
      get unchanged(): TreeOutcome {
        return { outcome: 'answer', body: { changes: [], cursor: sealed, has_more: false } }
      },
    }
  }

  /**
   * One answer from `start.at` (null: a new download), at most `limit` entries; `start.sent`
   * is its token (given back when the answer ends where it began: cursorAt).
   */
  private async read(
    ownerId: string,
    rootId: string | null,
    { at: start, sent }: { at: TreeCursor | null; sent: string },
    limit: number,
    minGeneration: number,
    cursors: TreeCursors,
    binding: string,
  ): Promise<Read> {
    let from = start
    for (let reads = 1; ; reads++) {
      const read = await this.store.readTree({ ownerId, rootId, minGeneration, from, limit })
      if (read.outcome !== 'answer') return read
      const cursor: TreeCursor = { position: read.position, expansion: read.expansion }
      if (read.entries.length > 0 || !read.more || reads === MAX_READS) {
        const changes = read.entries.map((entry) => treeEntry(entry, read.owner))
        // Only a place in the log, not one within a download, is given back unsealed anew.
        const plain = start?.expansion === null && cursor.expansion === null
        const token = cursorAt(
          { token: plain ? sent : null, at: start?.position ?? null },
          cursor.position,
          () => cursors.seal(cursor, binding),
        )
        return {
          outcome: 'read',
          body: { changes, cursor: token, has_more: read.more },
          idle: start !== null && changes.length === 0 && !read.more,
          present: read.present,
          cursor,
        }
      }
      from = cursor
    }
  }
}

/** An answer's entry as the feed sends it, with the owner as read in the answer's snapshot. */
function treeEntry(entry: AnswerEntry, owner: OwnerInfo): TreeEntry {
  switch (entry.type) {
    case 'owner':
      return { type: 'owner', owner }
    case 'remove':
      return { type: 'remove', id: entry.id, folder_id: entry.parentId }
    case 'upsert': {
      const upsert: TreeEntry = { type: 'upsert', folder: toFolderBody(entry.folder, owner) }
      if (entry.previousParent !== undefined) upsert.previous_folder_id = entry.previousParent
      return upsert
    }
  }
}
