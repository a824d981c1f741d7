import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import type { LightMyRequestResponse } from 'fastify'
import { compareCodePoints } from '../../src/ordering/code-points.js'
import type { Backend } from '../helpers/databases/backends.js'
import { insertLiveFolder } from '../../harness/raw-sql.js'
import {
  assertOnRawSql,
  listAll,
  newReplayStats,
  openCase,
  readFeed,
  replayOps,
  type FeedEntry,
  type FolderJson,
  type PropertyRig,
  type ReplayStats,
} from '../helpers/apps/feed-replay.js'

/**
 * The replay guarantee of the changes feed (docs/api.md "The replay guarantee") as a
 * property: random writes made by raw SQL on a second connection (insert, rename, move in
 * and out, delete, undelete, row delete, username change) interleave with a client that
 * takes the listing's rel="changes" cursor, walks the listing along its `next` links, then
 * drains the feed with small limits. At every quiet point (the feed said has_more: false
 * and nothing was written since), the client's replayed folders, sorted, must equal the
 * listing field for field.
 *
 * Each case gets a fresh user, session and two parent folders (imported), in one database
 * per backend; FC_SEED=<n> replays a failure.
 */

type Target = 'followed' | 'other' | 'root'

type Op =
  | { op: 'insert'; target: Target; name: number; at: number }
  | { op: 'rename'; pick: number; name: number }
  | { op: 'move'; pick: number; target: Target }
  | { op: 'delete'; pick: number }
  | { op: 'undelete'; pick: number }
  | { op: 'rowDelete'; pick: number }
  | { op: 'username' }
  | { op: 'page' }
  | { op: 'drain'; limit: number }
  | { op: 'check' }

const target = fc.constantFrom<Target>('followed', 'followed', 'other', 'root')
const pick = fc.nat(50)
/** few names and instants: ties in the listing order are common */
const NAMES = ['a', 'B', 'a', 'é', 'e\u0301', 'zz', '😀', 'Docs']
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constant('insert' as const), target, name: fc.nat(7), at: fc.nat(3) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('rename' as const), pick, name: fc.nat(7) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('move' as const), pick, target }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), pick }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('undelete' as const), pick }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rowDelete' as const), pick }) },
  { weight: 1, arbitrary: fc.constant({ op: 'username' as const }) },
  { weight: 3, arbitrary: fc.constant({ op: 'page' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('drain' as const), limit: fc.integer({ min: 1, max: 3 }) }),
  },
  { weight: 2, arbitrary: fc.constant({ op: 'check' as const }) },
)

const BASE_TIME = Date.parse('2026-02-01T00:00:00.000Z')

const byListingOrder = (a: FolderJson, b: FolderJson) =>
  compareCodePoints(a.name, b.name) ||
  (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0) ||
  (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** One case: a fresh owner and folders, the ops, and a final quiet point. */
async function runCase(rig: PropertyRig, ops: Op[], stats: ReplayStats) {
  const { sql } = rig
  const owner = randomUUID()
  const session = randomUUID()
  const followed = randomUUID()
  const other = randomUUID()
  let usernames = 0
  const username = () => `replay-${owner.slice(0, 8)}-${usernames++}`
  const get = await openCase(
    rig,
    session,
    [{ id: owner, username: username() }],
    [
      { id: followed, name: 'followed' },
      { id: other, name: 'other' },
    ],
  )
  const parentOf: Record<Target, string | null> = { followed, other, root: null }
  const made: string[] = []
  const picked = (n: number) => made[n % Math.max(made.length, 1)]

  // The client: page 1 gives the cursor (in its Link header); `next` links walk the rest.
  const replica = new Map<string, FolderJson>()
  const first = await get(`/v1/folders?folder_id=${followed}&limit=2`)
  const link = String(first.headers.link)
  let cursorUrl = /<([^>]+)>; rel="changes"/.exec(link)?.[1]
  assert.ok(cursorUrl !== undefined, link)
  let next: string | undefined
  const takePage = (res: LightMyRequestResponse) => {
    for (const f of res.json<{ folders: FolderJson[] }>().folders) replica.set(f.id, f)
    next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link))?.[1]
  }
  takePage(first)

  const apply = (entry: FeedEntry) => {
    if (entry.type === 'upsert') replica.set(entry.folder.id, entry.folder)
    else if (entry.type === 'remove') replica.delete(entry.id)
    else for (const f of replica.values()) f.owner = entry.owner
  }
  const drainOnce = async (limit: number): Promise<boolean> => {
    const body = await readFeed(get, `${cursorUrl}&limit=${limit}`, limit, stats, apply)
    cursorUrl = cursorUrl?.replace(/cursor=[A-Za-z0-9_-]+/, `cursor=${body.cursor}`)
    return body.has_more
  }
  const quiet = async () => {
    while (next !== undefined) takePage(await get(next))
    for (let i = 0; (await drainOnce(3)) && i < 1000; i++);
    assert.deepEqual([...replica.values()].sort(byListingOrder), await listAll(get, followed))
  }

  const step = async (op: Op): Promise<boolean> => {
    const id = 'pick' in op ? picked(op.pick) : undefined
    switch (op.op) {
      case 'insert': {
        const newId = randomUUID()
        made.push(newId)
        await insertLiveFolder(sql, {
          id: newId,
          name: NAMES[op.name] as string,
          parent: parentOf[op.target],
          owner,
          at: BASE_TIME + op.at,
        })
        return true
      }
      case 'rename':
        if (id === undefined) return false
        await sql.run('UPDATE folders SET name = ? WHERE id = ?', NAMES[op.name], id)
        return true
      case 'move':
        if (id === undefined) return false
        await sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', parentOf[op.target], id)
        return true
      case 'delete':
      case 'undelete':
        if (id === undefined) return false
        await sql.run(
          `UPDATE folders SET is_deleted = ${op.op === 'delete' ? sql.true : sql.false} WHERE id = ?`,
          id,
        )
        return true
      case 'rowDelete':
        if (id === undefined) return false
        await sql.run('DELETE FROM folders WHERE id = ?', id)
        made.splice(made.indexOf(id), 1)
        return true
      case 'username':
        await sql.run('UPDATE users SET username = ? WHERE id = ?', username(), owner)
        return true
      case 'page':
        if (next !== undefined) takePage(await get(next))
        return false
      case 'drain':
        if (next === undefined) await drainOnce(op.limit)
        return false
      case 'check':
        return false
    }
  }
  await replayOps(ops, stats, step, quiet)
}

export async function runReplayProperty(
  backend: Backend,
  options: { numRuns: number; maxOps: number },
): Promise<ReplayStats> {
  const stats = newReplayStats()
  await assertOnRawSql(
    backend,
    options.numRuns,
    fc.array(opArb, { minLength: Math.ceil(options.maxOps / 2), maxLength: options.maxOps }),
    (rig, ops) => runCase(rig, ops, stats),
  )
  return stats
}

export function replaySummary(s: ReplayStats): string {
  return `${s.cases} cases, ${s.writes} raw-SQL writes, ${s.checks} quiet-point checks, entries ${JSON.stringify(s.entries)}, ${s.cutShort} answers cut short`
}
