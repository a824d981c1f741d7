import {
  FolderServiceError,
  FolderTree,
  type Folder,
  type FolderServiceClient,
  type TreeEntry,
} from '../client/index.js'
import { followTree, type TreeSource } from '../client/follow-tree.js'
import { sleep } from '../client/retry-after.js'

/**
 * One follow of the user's folder tree (GET /v1/folders/tree) per session and browser,
 * shared by every visible tab of the folder browser: both panes of a page live on it (the
 * tree pane shows the tree; the listing is listed again when a change touches the open
 * folder), and one tab, the leader, holds the one request for all of them. The service
 * bounds the requests one session may hold (LONG_POLL_PER_SESSION), so a page that held
 * one per pane and per tab ran out of them at the third window.
 *
 * The leader is the tab that holds the Web Lock named after the session; the others queue
 * for it. The leader relays every batch over a BroadcastChannel of the same name; a tab
 * that joins says hello and gets the tree the leader holds, then the batches. When the
 * leader's tab closes or is hidden, its lock is released and the next tab in the queue
 * takes over with a new download (a sign-out ends every tab's follow: below). Where the browser offers no Web Locks (a page served
 * over plain HTTP to another host is no secure context), each tab leads alone: one request
 * per visible tab.
 *
 * Trouble that passes (429 past the bound, 503, the network) is tried again after the
 * service's Retry-After (or a pause), with a new download: the follow recovers by itself
 * when a slot frees. Any other problem (401, 403) goes to `failed` and ends the follow.
 *
 * The cookie is the browser's, not the tab's: a sign-out or another user's sign-in in any
 * window changes what the next request carries. So the follow belongs to one session and
 * checks that the cookie still names it (`signedIn`) before each request and on receipt of
 * each answer and each relayed message: a leader never asks with another session's cookie
 * (which would put one user's tree on another's channel), and no tab shows or relays an
 * answer that arrives after its session left. On a mismatch the follow ends at once
 * (`left`); the page says what changed.
 */

/** What each tab gets: its own copy of the tree, and the entries that changed it. */
export interface SharedBatch {
  tree: FolderTree
  changes: readonly TreeEntry[]
  /** a new tree (a download, or the leader's copy handed over): replace what was shown */
  restarted: boolean
  atPresent: boolean
}

export interface SharedFollowHandlers {
  batch(batch: SharedBatch): void
  failed(error: unknown): void
  /** the cookie no longer names the follow's session (signed out, or in as another): it stopped */
  left(): void
}

/** Thrown where the follow finds that the cookie names another session than its own. */
class SessionLeft extends Error {
  constructor() {
    super('the session followed is no longer the one signed in')
  }
}

type Message =
  | { kind: 'hello' }
  | { kind: 'batch'; changes: TreeEntry[]; restarted: boolean; atPresent: boolean }
  | { kind: 'snapshot'; folders: Folder[]; atPresent: boolean }
  | { kind: 'failed' }

/** Seconds the leader's request is held while nothing changes. */
const WAIT_SECONDS = 25
/** The pause before trying again when the service gave no Retry-After. */
const PAUSE_MS = 5_000
/** The longest pause, whatever Retry-After says: a person is waiting. */
const MAX_PAUSE_MS = 30_000
const TRANSIENT = new Set(['NETWORK_ERROR', 'TIMEOUT', 'UNAVAILABLE', 'RATE_LIMITED', 'BAD_RESPONSE'])

const isTransient = (error: unknown) => error instanceof FolderServiceError && TRANSIENT.has(error.code)

/**
 * Follows as the leader until `signal` aborts or a problem that does not pass: each batch
 * goes to `deliver`. Transient trouble starts a new download after the pause asked for.
 */
async function lead(
  source: TreeSource,
  signal: AbortSignal,
  deliver: (batch: SharedBatch) => void,
): Promise<void> {
  while (!signal.aborted) {
    try {
      for await (const batch of followTree(source, { signal, wait: WAIT_SECONDS })) deliver(batch)
    } catch (error) {
      if (signal.aborted) return
      if (!isTransient(error)) throw error
      const asked = error instanceof FolderServiceError ? error.retryAfterMs : null
      await sleep(Math.min(asked ?? PAUSE_MS, MAX_PAUSE_MS), signal).catch(() => undefined)
    }
  }
}

/**
 * What the follow needs of the Web Locks API, typed here: the module is also compiled for
 * the Node tests, without the DOM's types.
 */
interface Locks {
  request(name: string, options: { signal: AbortSignal }, granted: () => Promise<void>): Promise<unknown>
}

/** The name of the session's lock and channel (the session id stays in this browser's origin). */
const shareName = (sessionId: string) => `folder-browser-tree:${sessionId}`

/**
 * Starts following `sessionId`'s tree for this tab; `signedIn` reads the session the
 * browser is signed in with now (the cookie). The returned function stops the follow (and
 * hands the lead on).
 */
export function followShared(
  client: FolderServiceClient,
  sessionId: string,
  signedIn: () => string | null,
  handlers: SharedFollowHandlers,
): () => void {
  const controller = new AbortController()
  const { signal } = controller
  const holds = () => signedIn() === sessionId
  const locks = (globalThis as { navigator?: { locks?: Locks } }).navigator?.locks
  const channel =
    locks !== undefined && typeof BroadcastChannel === 'function'
      ? new BroadcastChannel(shareName(sessionId))
      : null
  /** this tab's tree: the leader's own, or built from what the leader relays */
  let tree: FolderTree | null = null
  let atPresent = false
  let leading = false
  const post = (message: Message) => channel?.postMessage(message)

  const fail = (error: unknown) => {
    if (signal.aborted) return
    controller.abort()
    channel?.close()
    handlers.failed(error)
  }
  /** The session left: stop at once (a held request is aborted), tell nobody anything of it. */
  const leave = () => {
    if (signal.aborted) return
    controller.abort()
    channel?.close()
    handlers.left()
  }

  /**
   * The leader's requests: never sent, nor their answers taken, once the session left. (A
   * 429 or 503 the client itself retries after Retry-After is checked on receipt only; the
   * page aborts the follow, and with it that wait, as soon as it hears of a sign-in or out.)
   */
  const source: TreeSource = {
    async treeChanges(params, options) {
      if (!holds()) throw new SessionLeft()
      const body = await client.treeChanges(params, options)
      if (!holds()) throw new SessionLeft()
      return body
    },
  }

  const deliverOwn = (batch: SharedBatch) => {
    tree = batch.tree
    atPresent = batch.atPresent
    post({ kind: 'batch', changes: [...batch.changes], restarted: batch.restarted, atPresent })
    handlers.batch(batch)
  }

  channel?.addEventListener('message', (event) => {
    // Only this module posts on the channel (same origin, its own name).
    const message = (event as Event & { data: Message }).data
    if (!holds()) {
      leave() // whatever it says is of a session this tab no longer shows
      return
    }
    if (message.kind === 'hello') {
      if (leading && tree !== null) post({ kind: 'snapshot', folders: [...tree.folders()], atPresent })
      return
    }
    if (leading) return // another tab's stale relay while this one took over
    if (message.kind === 'failed') {
      // The page lists again and learns why from its own answer (signed out, frozen).
      fail(new Error('the leading tab stopped following'))
      return
    }
    const restarted = message.kind === 'snapshot' || message.restarted
    if (restarted) tree = new FolderTree()
    if (tree === null) return // joined mid-stream: the snapshot asked for comes next
    const changes =
      message.kind === 'snapshot'
        ? message.folders.map((folder): TreeEntry => ({ type: 'upsert', folder }))
        : message.changes
    tree.apply(changes)
    atPresent = message.atPresent
    handlers.batch({ tree, changes, restarted, atPresent })
  })

  const runAsLeader = async () => {
    leading = true
    try {
      await lead(source, signal, deliverOwn)
    } catch (error) {
      if (error instanceof SessionLeft) leave()
      else {
        post({ kind: 'failed' })
        fail(error)
      }
    } finally {
      leading = false
    }
  }

  if (locks === undefined || channel === null) void runAsLeader()
  else {
    post({ kind: 'hello' })
    locks.request(shareName(sessionId), { signal }, runAsLeader).catch(() => undefined) // aborted while queued: this tab stopped
  }
  return () => {
    controller.abort()
    channel?.close()
  }
}
