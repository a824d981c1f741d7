import type { FolderTreeBody, RequestOptions, TreeEntry, TreeParams } from './types.js'
import type { Backoff } from './feed-pacing.js'
import { followFeed, followerWait, restartOnExpiry } from './follow-feed.js'
import { FolderTree } from './folder-tree.js'

/**
 * `client.tree()`: a user's folder tree downloaded and then followed on one cursor, as the
 * replay guarantee of docs/api.md ("The folder tree") describes it: start without a cursor,
 * apply every answer; whenever one says has_more: false, the tree held is exactly the tree.
 * Long-poll with `wait`; the pacing, bounds and restarts are followFeed's, as for watch().
 */

/**
 * What `tree` yields. `tree` is the one FolderTree the follow keeps, changed in place
 * before each batch: read it before asking for the next batch (copy what you keep).
 * `atPresent` true: it is exactly the tree at the moment the batch was read; false: a
 * download or a backlog is being handed over in parts (at most about 10,000 entries each),
 * and more follows at once. `restarted`: the first batch of a new download (at the start,
 * and after a 410 CURSOR_EXPIRED): `tree` is a new object built from scratch; replace
 * whatever was shown.
 */
export interface TreeBatch {
  restarted: boolean
  changes: TreeEntry[]
  tree: FolderTree
  atPresent: boolean
}

export interface TreeOptions extends RequestOptions {
  /** the folder whose subtree is followed (not the folder itself); absent or null: the user's whole tree */
  root?: string | null
  /** most entries per answer (the service's default when absent; at most 1000) */
  limit?: number
  /** seconds each request may be held while nothing changes: 1 to 60, default 30 */
  wait?: number
}

/** What tree needs of the client. */
export interface TreeSource {
  treeChanges(params: TreeParams, options: RequestOptions): Promise<FolderTreeBody>
}

export async function* followTree(source: TreeSource, options: TreeOptions): AsyncGenerator<TreeBatch> {
  const wait = followerWait(options.wait)
  const request = options.signal === undefined ? {} : { signal: options.signal }
  const params = {
    ...(options.root == null ? {} : { root: options.root }),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
  }
  const ask = (cursor: string | null, wait: number) =>
    source.treeChanges({ ...params, ...(cursor === null ? {} : { cursor }), wait }, request)

  /** One download and the follow after it, until a 410 ends it. */
  async function* downloadAndFollow(backoff: Backoff): AsyncGenerator<TreeBatch> {
    const tree = new FolderTree()
    let restarted = true
    for await (const batch of followFeed(ask, null, { wait, firstWait: 0, backoff, ...request })) {
      tree.apply(batch.changes)
      yield { restarted, changes: batch.changes, tree, atPresent: batch.atPresent }
      restarted = false
    }
  }

  yield* restartOnExpiry(downloadAndFollow, options.signal)
}
