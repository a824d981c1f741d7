import { toFolderBody } from '../schemas/folder-body.js'
import type { DeploymentSealers } from '../tokens/token-sealers.js'
import type { ChangeEntry, FolderChangesBody } from '../schemas/changes-body.js'
import type { ChangesQueryString } from '../schemas/changes-query.js'
import {
  ALL_ROWS,
  type ChangePosition,
  type ChangesQuery,
  type ChangesResult,
  type ServingStore,
  type SessionUser,
} from '../store/store.js'
import { changesBinding, type ChangesCursors } from '../tokens/changes-cursor.js'
import { cursorAt, feedFolderId, feedRequest, HeldFeed, type FeedOutcome, type FeedRequest } from './feed.js'
import type { HeldRead } from './held-request.js'
import type { ChangeWatcher } from './watcher.js'
import { SharedReads } from './shared-reads.js'

/**
 * The changes feed of one parent (docs/api.md "Changes"), knowing nothing of HTTP: the
 * Store's log rows become the answer body (entries collapsed per folder at their last
 * occurrence, upserts in the listing's own folder shape), the next cursor and has_more;
 * with `wait`, the request is held on the process's watcher until a change commits. Every
 * outcome is a value; the route turns them into 200, 404, 400, 410 and 429.
 */

/** What a changes request asks for, after validation (a null cursor: start now). */
export interface ChangesRequest extends FeedRequest {
  /** null: the root */
  parentId: string | null
}

export function changesRequest({ folder_id, ...query }: ChangesQueryString): ChangesRequest {
  return { parentId: feedFolderId(folder_id), ...feedRequest(query) }
}

export type ChangesOutcome = FeedOutcome<FolderChangesBody>

type ChangesRead = Extract<ChangesResult, { outcome: 'changes' }>

/**
 * The answer to one read: each folder (by id) and the owner once, at their last occurrence,
 * in that order. The cursor is the position of the last row consumed when rows remain, the
 * present otherwise: never "the latest" when the answer stopped short.
 */
export function changesBody(
  read: ChangesRead,
  cursors: ChangesCursors,
  binding: string,
  /** the request's cursor and its place: an answer at that place gives it back (cursorAt) */
  sent: { token: string | null; at: ChangePosition | null } = { token: null, at: null },
): FolderChangesBody {
  const entries = new Map<string, ChangeEntry>()
  for (const row of read.rows) {
    let key: string
    let entry: ChangeEntry
    if (row.kind === 'owner') {
      key = 'owner'
      entry = { type: 'owner', owner: read.owner }
    } else {
      key = row.id
      entry =
        row.folder === null
          ? { type: 'remove', id: row.id }
          : { type: 'upsert', folder: toFolderBody(row.folder, read.owner) }
    }
    entries.delete(key) // re-inserted: Map order is the order of last occurrences
    entries.set(key, entry)
  }
  const last = read.rows.at(-1)
  const position: ChangePosition = read.more && last !== undefined ? last.position : read.present
  const cursor = cursorAt(sent, position, () => cursors.seal(position, binding))
  return { changes: [...entries.values()], cursor, has_more: read.more }
}

export class ChangesFeed extends HeldFeed<ChangesRequest, FolderChangesBody> {
  /** Reads shared by the requests one commit wakes (shared-reads.ts). */
  private readonly reading = new SharedReads<ChangesResult>()
  /**
   * The answer of a read, built once for all the requests that shared it: one object, so
   * that they also share the session check after it (session-recheck.ts).
   */
  private readonly answers = new WeakMap<ChangesRead, ChangesOutcome>()

  constructor(
    private readonly store: Pick<ServingStore, 'readChanges'>,
    private readonly sealers: DeploymentSealers,
    watcher: ChangeWatcher,
  ) {
    super(watcher)
  }

  /** The reads of `user`'s feed of `request.parentId`. */
  protected async heldRead(
    user: SessionUser,
    request: ChangesRequest,
    readOnce: boolean,
  ): Promise<HeldRead<ChangesOutcome> | { outcome: 'cursor-invalid' }> {
    const { parentId, cursor, limit } = request
    const cursors = (await this.sealers.get()).changes
    const binding = changesBinding(user.id, parentId)
    let after: ChangePosition | null = null
    if (cursor !== null) {
      after = cursors.open(cursor, binding)
      if (after === null) return { outcome: 'cursor-invalid' }
    }
    const answer = (result: ChangesRead): ChangesOutcome => {
      let outcome = this.answers.get(result)
      if (outcome === undefined) {
        outcome = {
          outcome: 'answer',
          body: changesBody(result, cursors, binding, { token: cursor, at: after }),
        }
        this.answers.set(result, outcome)
      }
      return outcome
    }
    const position = after
    return {
      user,
      readOnce,
      // At the session's own generation, with the whole of it consumed, nothing can follow.
      parkedAt:
        position !== null && position.generation === user.generation && position.row === ALL_ROWS
          ? user.generation
          : null,
      read: async (minGeneration, woken) => {
        // A replica may answer only once it holds that generation (no stale answer).
        const query = { ownerId: user.id, parentId, after: position, limit, minGeneration }
        const result = await (woken ? this.shared(query) : this.store.readChanges(query))
        if (result.outcome !== 'changes') return { send: { outcome: result.outcome } }
        if (readOnce || result.rows.length > 0) return { send: answer(result) }
        return { nothing: result.present.generation }
      },
      // Held: no changes, the same cursor, when the wait ends without one.
      unchanged: { outcome: 'answer', body: { changes: [], cursor: cursor ?? '', has_more: false } },
    }
  }

  private shared(query: ChangesQuery): Promise<ChangesResult> {
    const { ownerId, parentId, after, limit, minGeneration } = query
    const key = `${ownerId} ${parentId ?? ''} ${after?.generation ?? ''} ${after?.row ?? ''} ${limit} ${minGeneration ?? ''}`
    return this.reading.share(key, () => this.store.readChanges(query))
  }
}
