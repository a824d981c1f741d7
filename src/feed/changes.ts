import { normaliseUuid } from '../ids.js'
import { toFolderBody } from '../listing/listing.js'
import type { DeploymentSealers } from '../listing/token-sealers.js'
import type { ChangeEntry, FolderChangesBody } from '../schemas/changes.js'
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
import { changesBinding, type ChangesCursors } from './changes-cursor.js'
import type { ChangeWatcher, Hold } from './watcher.js'

/**
 * The changes feed of one parent (docs/api.md "Changes"), knowing nothing of HTTP: the
 * Store's log rows become the answer body (entries collapsed per folder at their last
 * occurrence, upserts built by the listing's own folder code), the next cursor and has_more;
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
  /** the process holds as many requests as it may: refuse, do not spin */
  | { outcome: 'busy' }

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

export interface FollowOptions {
  /** aborts a held request (the client went away) */
  signal: AbortSignal
  /** the process is shutting down: answer at once, never hold */
  draining: boolean
  /** the caller's own slot (an event stream holds one for its whole life): used, not released */
  hold?: Hold
}

export class ChangesFeed {
  /**
   * Reads in flight by what they ask: requests woken together (many clients following one
   * folder from the same point) share one read rather than each making its own. Only woken
   * requests share: a read begun before a commit may miss it, which a woken request survives
   * (no rows: it parks again and the next poll wakes it) but a fresh request must not.
   */
  private readonly reading = new Map<string, Promise<ChangesResult>>()
  /** The answer of a read, built once for all the requests that shared it. */
  private readonly bodies = new WeakMap<ChangesRead, FolderChangesBody>()

  constructor(
    private readonly store: Pick<ServingStore, 'readChanges'>,
    private readonly sealers: DeploymentSealers,
    private readonly watcher: ChangeWatcher,
  ) {}

  /** The answer for `user`'s feed of `request.parentId`, held up to `request.wait` seconds. */
  async follow(user: SessionUser, request: ChangesRequest, options: FollowOptions): Promise<FeedOutcome> {
    const { parentId, cursor, limit, wait } = request
    const cursors = (await this.sealers.get()).changes
    const binding = changesBinding(user.id, parentId)
    let after: ChangePosition | null = null
    if (cursor !== null) {
      after = cursors.open(cursor, binding)
      if (after === null) return { outcome: 'cursor-invalid' }
    }
    /** `woken`: after a wake, a read already in flight for the same query may be joined */
    const read = async (woken = false): Promise<FeedOutcome | ChangesRead> => {
      // A replica may answer only once it holds the session's generation (no stale answer).
      const query = { ownerId: user.id, parentId, after, limit, minGeneration: user.generation }
      const result = await (woken ? this.shared(query) : this.store.readChanges(query))
      return result.outcome === 'changes' ? result : { outcome: result.outcome }
    }
    const answer = (result: ChangesRead): FeedOutcome => {
      let body = this.bodies.get(result)
      if (body === undefined) {
        body = changesBody(result, cursors, binding)
        this.bodies.set(result, body)
      }
      return { outcome: 'answer', body }
    }
    if (after === null || cursor === null || wait === 0 || options.draining || !this.watcher.open) {
      const result = await read()
      return 'rows' in result ? answer(result) : result
    }

    // Held: no changes, the same cursor, when the wait ends without one.
    const unchanged: FeedOutcome = { outcome: 'answer', body: { changes: [], cursor, has_more: false } }
    const deadline = Date.now() + wait * 1000
    let hold: Hold | null = null
    try {
      // At the session's own generation, with the whole of it consumed, nothing can follow:
      // park without reading.
      let baseline: number | null =
        after.generation === user.generation && after.row === ALL_ROWS ? user.generation : null
      for (let woken = false; ; woken = true) {
        if (baseline === null) {
          const result = await read(woken)
          if (!('rows' in result)) return result
          if (result.rows.length > 0) return answer(result)
          baseline = result.present.generation
        }
        hold ??= options.hold ?? this.watcher.hold()
        if (hold === null) return { outcome: 'busy' }
        const end = await hold.until(user.id, baseline, deadline, options.signal)
        if (end !== 'changed') return unchanged
        baseline = null
      }
    } finally {
      if (hold !== options.hold) hold?.release()
    }
  }

  /** A place among the process's held requests for a caller that holds one throughout, or null. */
  hold(): Hold | null {
    return this.watcher.hold()
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
