import { Backoff, cameBackEarly, EARLY_EMPTY_PAUSE_MS } from './feed-pacing.js'
import { FolderServiceError, nonsenseAnswer } from './folder-service-error.js'
import { sleep } from './retry-after.js'
import { MAX_WAIT_SECONDS } from '../api/limits.js'

/**
 * Following one feed (a folder's changes or a tree) from a cursor, answer after answer, as
 * the client and the folder browser share it: `has_more: true` is asked again at once,
 * the present is asked again with `wait`, and whatever the service sends, the follower
 * stays bounded: in requests (the pauses of feed-pacing.ts; a cursor that comes back within
 * one drain ends it with BAD_RESPONSE instead of going round forever) and in memory (a
 * backlog is handed over in batches of at most about MAX_BATCH_ENTRIES entries as it
 * arrives, never buffered whole).
 */

/** The body shared by both feeds. */
interface FeedAnswer<Entry> {
  changes: Entry[]
  cursor: string
  has_more: boolean
}

export interface FeedBatch<Entry> {
  /** the entries of one or more answers, in commit order */
  changes: Entry[]
  /** where the next answer starts */
  cursor: string
  /** the last answer said has_more: false; false: more is on its way */
  atPresent: boolean
}

/** One request of the feed: `cursor` null starts it anew (the tree's download). */
export type AskFeed<Entry> = (cursor: string | null, waitSeconds: number) => Promise<FeedAnswer<Entry>>

export interface FollowFeedOptions {
  /** seconds each request may be held once the present is reached */
  wait: number
  /** the first request's wait: 0 catches up at once */
  firstWait: number
  /** cuts a pause short (the requests take it through `ask`) */
  signal?: AbortSignal
  /** told each time a held request proved the feed works (it carried changes or ran its wait) */
  backoff?: Backoff
}

/** Entries held before a batch is handed over while has_more: true goes on. */
const MAX_BATCH_ENTRIES = 10_000

/**
 * A follower's `wait` (default 30 s), 1 to the service's bound: wait 0 would make the follow
 * ask again at once, forever, while nothing changes.
 */
export function followerWait(wait = 30): number {
  if (!Number.isInteger(wait) || wait < 1 || wait > MAX_WAIT_SECONDS) {
    throw new RangeError(`wait must be 1 to ${MAX_WAIT_SECONDS} seconds`)
  }
  return wait
}

/**
 * Cursors remembered per drain for the cycle check: a drain longer than this starts a new
 * set, so the check never holds more than about 2.5 MB.
 */
const MAX_SEEN_CURSORS = 10_000

/**
 * Yields a batch whenever the entries held reach MAX_BATCH_ENTRIES (atPresent: false) and
 * when an answer reaches the present, unless that batch would say nothing new: no entries
 * and already at the present. So the first batch always comes (even empty), and every
 * later one carries entries or tells that a backlog was caught up. Never returns; ends by
 * the error of a request (an abort included).
 */
export async function* followFeed<Entry>(
  ask: AskFeed<Entry>,
  start: string | null,
  options: FollowFeedOptions,
): AsyncGenerator<FeedBatch<Entry>> {
  let cursor = start
  let wait = options.firstWait
  let pause = 0
  let yielded = false
  let atPresent = false
  let held: Entry[] = []
  let seen = new Set<string>()
  for (;;) {
    if (pause > 0) await sleep(pause, options.signal)
    const asked = Date.now()
    const body = await ask(cursor, wait)
    const elapsed = Date.now() - asked
    if (body.has_more && (body.cursor === cursor || seen.has(body.cursor))) {
      throw nonsenseAnswer(
        'a feed answer with has_more: true returned a cursor already asked in this drain: it goes round in a cycle',
        '',
      )
    }
    if (cursor !== null) {
      if (seen.size >= MAX_SEEN_CURSORS) seen = new Set()
      seen.add(cursor)
    }
    pause = cameBackEarly(body, wait, elapsed) ? EARLY_EMPTY_PAUSE_MS : 0
    if (wait > 0 && pause === 0) options.backoff?.succeeded()
    cursor = body.cursor
    for (const entry of body.changes) held.push(entry)
    if (body.has_more) {
      wait = 0
      if (held.length < MAX_BATCH_ENTRIES) continue
    } else {
      wait = options.wait
      seen = new Set()
    }
    if (held.length > 0 || !yielded || atPresent !== !body.has_more) {
      yielded = true
      atPresent = !body.has_more
      const changes = held
      held = []
      yield { changes, cursor: body.cursor, atPresent }
    }
  }
}

const isExpired = (error: unknown) => error instanceof FolderServiceError && error.code === 'CURSOR_EXPIRED'

/**
 * `follow` run again each time it ends with 410 CURSOR_EXPIRED (a new listing or download,
 * a fresh cursor), after the pause `backoff` gives for failures in a row; the backoff is
 * handed to `follow` so that its followFeed can clear it once the feed works again. Any
 * other error ends it.
 */
export async function* restartOnExpiry<T>(
  follow: (backoff: Backoff) => AsyncGenerator<T>,
  signal: AbortSignal | undefined,
): AsyncGenerator<T> {
  const backoff = new Backoff()
  for (;;) {
    try {
      yield* follow(backoff)
    } catch (error) {
      if (!isExpired(error)) throw error
      await sleep(backoff.failed(), signal)
    }
  }
}
