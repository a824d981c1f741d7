import { normaliseUuid } from '../ids.js'
import { toFolderBody } from '../schemas/folder-body.js'
import type { DeploymentSealers } from '../tokens/token-sealers.js'
import type { ChangeEntry, FolderChangesBody } from '../schemas/changes-body.js'
import {
  DEFAULT_CHANGES_LIMIT,
  MAX_CHANGES_LIMIT,
  type ChangesQueryString,
} from '../schemas/changes-query.js'
import {
  ALL_ROWS,
  type ChangePosition,
  type ChangesQuery,
  type ChangesResult,
  type ServingStore,
  type SessionUser,
} from '../store/store.js'
import { changesBinding, type ChangesCursors } from '../tokens/changes-cursor.js'
import {
  holdUntilChanged,
  readOnce,
  type HeldRead,
  type HoldOptions,
  type HoldRefusal,
  type Idle,
} from './held-request.js'
import type { ChangeWatcher, Hold } from './watcher.js'

/**
 * The changes feed of one parent (docs/api.md "Changes"), knowing nothing of HTTP: the
 * Store's log rows become the answer body (entries collapsed per folder at their last
 * occurrence, upserts in the listing's own folder shape), the next cursor and has_more;
 * with `wait`, the request is held on the process's watcher until a change commits. Every
 * outcome is a value; the route turns them into 200, 404, 400, 410 and 429.
 */

/** What a changes request asks for, after validation: limit clamped, folder id lower-cased. */
export interface ChangesRequest {
  /** null: the root */
  parentId: string | null
  /** the cursor as sent; null: start now */
  cursor: string | null
  limit: number
  /** seconds to hold the answer when nothing follows the cursor */
  wait: number
}

export function changesRequest({ folder_id, cursor, limit, wait }: ChangesQueryString): ChangesRequest {
  return {
    parentId: folder_id === undefined ? null : normaliseUuid(folder_id),
    cursor: cursor ?? null,
    limit: limit === undefined ? DEFAULT_CHANGES_LIMIT : Math.min(Number(limit), MAX_CHANGES_LIMIT),
    wait: wait === undefined ? 0 : Number(wait),
  }
}

export type FeedOutcome =
  | { outcome: 'answer'; body: FolderChangesBody }
  | { outcome: 'parent-not-found' }
  | { outcome: 'cursor-invalid' }
  | { outcome: 'expired' }
  | HoldRefusal

type ChangesRead = Extract<ChangesResult, { outcome: 'changes' }>

/**
 * The answer to one read: each folder (by id) and the owner once, at their last occurrence,
 * in that order. The cursor is the position of the last row consumed when rows remain, the
 * present otherwise: never "the latest" when the answer stopped short.
 */
export function changesBody(read: ChangesRead, cursors: ChangesCursors, binding: string): FolderChangesBody {
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
  return { changes: [...entries.values()], cursor: cursors.seal(position, binding), has_more: read.more }
}

export class ChangesFeed {
  /**
   * Reads in flight by what they ask: requests woken together (many clients following one
   * folder from the same point) share one read rather than each making its own. Only woken
   * requests share: a read begun before a commit may miss it, which a woken request survives
   * (no rows: it parks again and the next poll wakes it) but a fresh request must not.
   */
  private readonly reading = new Map<string, Promise<ChangesResult>>()
  /**
   * The answer of a read, built once for all the requests that shared it: one object, so
   * that they also share the session check after it (session-recheck.ts).
   */
  private readonly answers = new WeakMap<ChangesRead, FeedOutcome>()

  constructor(
    private readonly store: Pick<ServingStore, 'readChanges'>,
    private readonly sealers: DeploymentSealers,
    private readonly watcher: ChangeWatcher,
  ) {}

  /** The answer for `user`'s feed of `request.parentId`, held up to `request.wait` seconds. */
  async follow(user: SessionUser, request: ChangesRequest, options: HoldOptions): Promise<FeedOutcome> {
    const held = await this.heldRead(user, request)
    return 'read' in held ? holdUntilChanged(this.watcher, held, options) : held
  }

  /** One read for a caller that parks itself (held-request.ts readOnce). */
  async step(
    user: SessionUser,
    request: ChangesRequest,
    wokenAt: number | null,
  ): Promise<FeedOutcome | Idle> {
    const held = await this.heldRead(user, request)
    return 'read' in held ? readOnce(held, wokenAt) : held
  }

  private async heldRead(
    user: SessionUser,
    request: ChangesRequest,
  ): Promise<HeldRead<FeedOutcome> | { outcome: 'cursor-invalid' }> {
    const { parentId, cursor, limit, wait } = request
    const cursors = (await this.sealers.get()).changes
    const binding = changesBinding(user.id, parentId)
    let after: ChangePosition | null = null
    if (cursor !== null) {
      after = cursors.open(cursor, binding)
      if (after === null) return { outcome: 'cursor-invalid' }
    }
    const answer = (result: ChangesRead): FeedOutcome => {
      let outcome = this.answers.get(result)
      if (outcome === undefined) {
        outcome = { outcome: 'answer', body: changesBody(result, cursors, binding) }
        this.answers.set(result, outcome)
      }
      return outcome
    }
    const position = after
    return {
      user,
      wait: position === null ? 0 : wait,
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
        if (position === null || result.rows.length > 0 || wait === 0) return { send: answer(result) }
        return { nothing: result.present.generation }
      },
      // Held: no changes, the same cursor, when the wait ends without one.
      unchanged: { outcome: 'answer', body: { changes: [], cursor: cursor ?? '', has_more: false } },
    }
  }

  /**
   * A place among the process's held requests for a caller that holds one throughout (an
   * event stream of session `holder`), or null past the process's or the session's bound.
   */
  hold(holder: string): Hold | null {
    return this.watcher.hold(holder)
  }

  private shared(query: ChangesQuery): Promise<ChangesResult> {
    const { ownerId, parentId, after, limit, minGeneration } = query
    const key = `${ownerId} ${parentId ?? ''} ${after?.generation ?? ''} ${after?.row ?? ''} ${limit} ${minGeneration ?? ''}`
    let pending = this.reading.get(key)
    if (pending === undefined) {
      pending = this.store.readChanges(query).finally(() => this.reading.delete(key))
      this.reading.set(key, pending)
    }
    return pending
  }
}
