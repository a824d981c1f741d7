import { normaliseUuid } from '../ids.js'
import { DEFAULT_CHANGES_LIMIT, MAX_CHANGES_LIMIT } from '../schemas/changes-query.js'
import type { ChangePosition, SessionUser } from '../store/store.js'
import {
  holdUntilChanged,
  readStep,
  type HeldRead,
  type HoldOptions,
  type HoldRefusal,
  type Idle,
} from './held-request.js'
import type { ChangeWatcher, Hold } from './watcher.js'

/**
 * What a feed is (docs/api.md "GET /v1/folders/changes", "GET /v1/folders/tree" and "Push
 * (Server-Sent Events)"): a log of one user's folders followed on a cursor, answered once,
 * held while nothing follows it (`wait`), or read step by step by an event stream that
 * parks itself. The changes feed and the tree feed each implement {@link Feed}; the HTTP
 * half (src/http/feeds/) serves any of them.
 */

/** What every feed request carries, after validation. */
export interface FeedRequest {
  /** the cursor as sent; null: start (now, or a new download) */
  cursor: string | null
  /** most entries in one answer, clamped */
  limit: number
  /** seconds to hold the answer when nothing follows the cursor */
  wait: number
}

/** The query's text of a {@link FeedRequest}, as the route's schema let it through. */
export interface FeedQueryString {
  cursor?: string
  limit?: string
  wait?: string
}

/** The parts every feed's query shares: limit clamped (both feeds' bounds), wait 0 when absent. */
export function feedRequest({ cursor, limit, wait }: FeedQueryString): FeedRequest {
  return {
    cursor: cursor ?? null,
    limit: limit === undefined ? DEFAULT_CHANGES_LIMIT : Math.min(Number(limit), MAX_CHANGES_LIMIT),
    wait: wait === undefined ? 0 : Number(wait),
  }
}

/** A folder id of a feed's query (its parent, its root), lower-cased; absent: the root (null). */
export function feedFolderId(id: string | undefined): string | null {
  return id === undefined ? null : normaliseUuid(id)
}

/**
 * The cursor of an answer that leaves the client where its own cursor put it: that very
 * token, not a new sealing of the same place. The followers that arrived with one cursor and
 * found nothing new (an event stream's first answer at the present) then go on holding one
 * token, which the next wake opens once for all of them (opened-tokens.ts remembers it)
 * rather than one decryption per follower. A cursor is its place and binding alone (no time
 * is sealed in it), so the old token means exactly what a new one would.
 */
export function cursorAt(
  sent: { token: string | null; at: ChangePosition | null },
  at: ChangePosition,
  seal: () => string,
): string {
  const { token, at: was } = sent
  return token !== null && was !== null && was.generation === at.generation && was.row === at.row
    ? token
    : seal()
}

/** What every answer of a feed is: entries in commit order, the next cursor, and whether more follows now. */
export interface FeedBody {
  changes: readonly unknown[]
  cursor: string
  has_more: boolean
}

/** The ways a feed request is refused, as values (the HTTP half turns them into problems). */
export type FeedRefusal =
  | HoldRefusal
  /** the folder followed is missing, another user's or deleted: 404 */
  | { outcome: 'parent-not-found' }
  /** the cursor is not one of this feed's for this user and folder: 400 */
  | { outcome: 'cursor-invalid' }
  /** what follows the cursor is no longer kept: 410 */
  | { outcome: 'expired' }

/** A feed's outcome: an answer, or a refusal. */
export type FeedOutcome<B extends FeedBody> = { outcome: 'answer'; body: B } | FeedRefusal

/** What the HTTP half asks of a feed. */
export interface Feed<R extends FeedRequest, B extends FeedBody> {
  /**
   * A place among the held requests for a caller that holds one throughout (an event
   * stream of session `holder`), or null past the process's or the session's bound.
   */
  hold(holder: string): Hold | null
  /** The answer for `user`, held up to `request.wait` seconds while nothing follows the cursor. */
  follow(user: SessionUser, request: R, options: HoldOptions): Promise<FeedOutcome<B>>
  /**
   * One read for a caller that parks itself when it finds nothing (held-request.ts readStep);
   * `readOnce`: answer even then (a stream's last read). `request.wait` is not used.
   */
  step(
    user: SessionUser,
    request: R,
    wokenAt: number | null,
    readOnce: boolean,
  ): Promise<FeedOutcome<B> | Idle>
}

/**
 * The part both feeds share: a request becomes one {@link HeldRead} (its cursor opened, its
 * reads), which the watcher holds or a stream steps through. A request without a cursor
 * is always read once.
 */
export abstract class HeldFeed<R extends FeedRequest, B extends FeedBody> implements Feed<R, B> {
  constructor(protected readonly watcher: ChangeWatcher) {}

  hold(holder: string): Hold | null {
    return this.watcher.hold(holder)
  }

  async follow(user: SessionUser, request: R, options: HoldOptions): Promise<FeedOutcome<B>> {
    const held = await this.heldRead(user, request, request.wait === 0 || request.cursor === null)
    return 'read' in held ? holdUntilChanged(this.watcher, held, request.wait, options) : held
  }

  async step(
    user: SessionUser,
    request: R,
    wokenAt: number | null,
    readOnce: boolean,
  ): Promise<FeedOutcome<B> | Idle> {
    const held = await this.heldRead(user, request, readOnce || request.cursor === null)
    return 'read' in held ? readStep(held, wokenAt) : held
  }

  /** The reads of `request` (`readOnce` as {@link HeldRead.readOnce}), or why it is refused at once. */
  protected abstract heldRead(
    user: SessionUser,
    request: R,
    readOnce: boolean,
  ): Promise<HeldRead<FeedOutcome<B>> | FeedRefusal>
}
