import { setTimeout as sleep } from 'node:timers/promises'
import { FolderServiceClient, type FolderTree } from '../../src/client/index.js'
import { HOST } from './processes.js'
import { startWriter, type WriterReport } from './write-phase.js'

/**
 * `npm run bench:tree`'s phase "follow under writes": the user's tree downloaded and followed
 * with `client.tree()` (long-poll) while the writer process (writer.ts) inserts, renames and
 * deletes among the children of the user's parents at `rate` writes/s; then the writer
 * stops, the follower catches up, and its tree is compared field for field with the tree by
 * its definition, what the listings starting at the root reach. The writer cannot pause, so
 * the trees are compared once, at the end, when nothing is written any more.
 */

/** seconds a follower's request is held at the present: short, so the last one soon confirms the end */
const FOLLOW_WAIT = 2
/** mismatches printed, at most */
const SHOWN = 10
/** bound on the wait for the follower to confirm it is at the present after the writer stopped */
const CATCH_UP_MS = 60_000

export interface FollowPlan {
  root: string
  tmp: string
  db: string
  port: number
  ownerId: string
  sessionId: string
  /** the folders written under, each with its live children at start */
  parents: { id: string; childIds: string[] }[]
  rate: number
  seconds: number
  /** every folder the listings reach from the root, as they show it */
  listed(): Promise<Map<string, Record<string, unknown>>>
}

export interface FollowFigures {
  writer: WriterReport
  /** folders in the tree by the listings at the end */
  folders: number
  /** folders in the follower's tree at the end */
  followerFolders: number
  mismatchCount: number
  /** the first SHOWN mismatches: a folder id and the field that differs */
  mismatches: string[]
  /** batches the follower received (the download's included) */
  batches: number
  downloadBatches: number
  /** from the writer's exit (every write committed) to the follower's last batch carrying changes; 0 if it had them all by then */
  catchUpMs: number
  /** from the last write's commit to the follower's batch carrying it (the last batch with changes) */
  lastWriteMs: number
}

/** The differences between the follower's tree and the tree by the listings, field by field. */
function compareTrees(
  follower: FolderTree,
  listed: Map<string, Record<string, unknown>>,
): { count: number; shown: string[] } {
  const shown: string[] = []
  let count = 0
  const note = (id: string, what: string) => {
    count++
    if (shown.length < SHOWN) shown.push(`${id}: ${what}`)
  }
  const held = new Map<string, Record<string, unknown>>()
  for (const folder of follower.folders()) held.set(folder.id, { ...folder })
  for (const [id, expected] of listed) {
    const got = held.get(id)
    if (got === undefined) {
      note(id, 'missing from the follower')
      continue
    }
    for (const field of new Set([...Object.keys(expected), ...Object.keys(got)])) {
      if (JSON.stringify(got[field]) !== JSON.stringify(expected[field])) note(id, `field ${field}`)
    }
  }
  for (const id of held.keys()) if (!listed.has(id)) note(id, 'held by the follower, not listed')
  return { count, shown }
}

export async function followUnderWrites(plan: FollowPlan): Promise<FollowFigures> {
  /** each tree request of the follower, in order: when sent, and whether its answer said has_more (null: none yet) */
  const requests: { sentAt: number; hasMore: boolean | null }[] = []
  const client = new FolderServiceClient({
    baseUrl: `http://${HOST}:${plan.port}`,
    sessionId: plan.sessionId,
    fetch: async (input, init) => {
      const request = { sentAt: performance.now(), hasMore: null as boolean | null }
      requests.push(request)
      const response = await fetch(input, init)
      if (response.ok) {
        const body = (await response.clone().json()) as { has_more?: boolean }
        request.hasMore = body.has_more !== false
      }
      return response
    },
  })
  const abort = new AbortController()
  const iterator = client.tree({ limit: 1000, wait: FOLLOW_WAIT, signal: abort.signal })
  let tree: FolderTree | undefined
  let batches = 0
  /** performance.now() and Date.now() of the last batch carrying changes */
  let lastChangesAt = 0
  let lastChangesAtEpoch = 0

  // The download, to its first batch at the present, before the writer starts.
  for (;;) {
    const next = await iterator.next()
    if (next.done === true) throw new Error('the tree follow ended during the download')
    batches++
    tree = next.value.tree
    if (next.value.atPresent) break
  }
  const downloadBatches = batches

  const following = (async () => {
    for (;;) {
      const next = await iterator.next()
      if (next.done === true) return
      batches++
      tree = next.value.tree
      if (next.value.changes.length > 0) {
        lastChangesAt = performance.now()
        lastChangesAtEpoch = Date.now()
      }
    }
  })().catch((error: unknown) => {
    if (!abort.signal.aborted) throw error
  })

  const writer = startWriter(
    { root: plan.root, tmp: plan.tmp },
    {
      db: plan.db,
      port: plan.port,
      rate: plan.rate,
      limit: 100,
      // a bound only: the phase stops it after plan.seconds
      seconds: plan.seconds + 60,
      seed: 1,
      users: plan.parents.map((p) => ({
        ownerId: plan.ownerId,
        sessionId: plan.sessionId,
        folderId: p.id,
        childIds: p.childIds,
      })),
    },
  )
  await sleep(plan.seconds * 1000)
  const report = await writer.stop()
  const stoppedAt = performance.now()

  // At the present once an answer to a request sent after the writer's exit said has_more:
  // false, and applied: the follower asks again only after applying an answer.
  const deadline = stoppedAt + CATCH_UP_MS
  const caughtUp = () =>
    requests.some((r, i) => r.sentAt > stoppedAt && r.hasMore === false && i + 1 < requests.length)
  while (!caughtUp()) {
    if (performance.now() > deadline)
      throw new Error(`the follower did not reach the present within ${CATCH_UP_MS} ms`)
    await sleep(20)
  }
  abort.abort()
  await following
  const held = tree as FolderTree | undefined
  if (held === undefined) throw new Error('the follower holds no tree')
  const listed = await plan.listed()
  const { count, shown } = compareTrees(held, listed)
  return {
    writer: report,
    folders: listed.size,
    followerFolders: held.size,
    mismatchCount: count,
    mismatches: shown,
    batches,
    downloadBatches,
    catchUpMs: Math.max(0, lastChangesAt - stoppedAt),
    lastWriteMs: lastChangesAtEpoch - report.lastCommitAt,
  }
}
