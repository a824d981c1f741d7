import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
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
 * The replay guarantee of the folder tree feed (docs/api.md "Folder tree") as a property:
 * random raw-SQL writes on a second connection (create, rename, move within the tree, out of
 * it and into it, under a folder's own subtree, delete and undelete of any folder with its
 * subtree, row deletes, folders given to another user and back, alone or with their subtree
 * in one statement, username changes, the
 * followed root's own row renamed and moved) interleave with a strict client
 * (ChildListClient: child lists only, every forbidden entry fails) that downloads the tree,
 * starts new downloads among the writes, and follows it, with small limits (1 to 3) and
 * larger ones (20). At every quiet point (has_more: false and nothing written since), the
 * client's tree must equal the tree reached by walking the listings from `root`, each folder
 * byte for byte as its parent's listing shows it.
 *
 * Each case gets a fresh user (and a second one to give folders to), with `root` either a
 * folder of theirs or their root; FC_SEED=<n> replays a failure.
 */

/** Where a folder is created or moved: a made folder (by pick), the tree's root, or outside it. */
type Place = { kind: 'made'; pick: number } | { kind: 'root' } | { kind: 'outside' }

type Op =
  | { op: 'create'; place: Place; name: number }
  | { op: 'rename'; pick: number; name: number }
  | { op: 'move'; pick: number; place: Place }
  | { op: 'delete'; pick: number }
  | { op: 'undelete'; pick: number }
  | { op: 'rowDelete'; pick: number }
  | { op: 'giveAway'; pick: number }
  | { op: 'giveBack'; place: Place }
  | { op: 'giveSubtree'; pick: number }
  | { op: 'takeSubtree'; place: Place }
  | { op: 'username' }
  | { op: 'rootRow'; how: number }
  | { op: 'restart' }
  | { op: 'read'; limit: number }
  | { op: 'check' }

const pick = fc.nat(40)
const place: fc.Arbitrary<Place> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('made' as const), pick }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'root' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'outside' as const }) },
)
const NAMES = ['a', 'B', 'a', 'é', 'zz', 'Docs']
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('create' as const), place, name: fc.nat(5) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('rename' as const), pick, name: fc.nat(5) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('move' as const), pick, place }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('delete' as const), pick }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('undelete' as const), pick }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rowDelete' as const), pick }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('giveAway' as const), pick }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('giveBack' as const), place }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('giveSubtree' as const), pick }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('takeSubtree' as const), place }) },
  { weight: 1, arbitrary: fc.constant({ op: 'username' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rootRow' as const), how: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'restart' as const }) },
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constant('read' as const), limit: fc.constantFrom(1, 2, 3, 3, 20) }),
  },
  { weight: 2, arbitrary: fc.constant({ op: 'check' as const }) },
)

export interface TreeReplayStats extends ReplayStats {
  /** writes the database refused (a foreign key: a parent of another owner, a row with children) */
  refused: number
  moved: number
}

const BASE_TIME = Date.parse('2026-02-01T00:00:00.000Z')

/**
 * A strict client of the tree feed that keeps only a child list per parent and the folders'
 * bodies, with NO map of parents: it finds a moved folder through previous_folder_id and a
 * removed one through remove's folder_id, and takes a remove's subtree from the child lists.
 * Every entry the contract forbids fails the property: a remove of a folder it does not hold
 * under that folder_id, a previous_folder_id that is not where it holds the folder, an
 * upsert without previous_folder_id of a folder it holds under another parent. Where it
 * holds a folder is looked up only to check an entry, never to apply one.
 */
class ChildListClient {
  /** parent id ('' for the tree's root) -> ids held under it */
  private readonly children = new Map<string, Set<string>>()
  readonly bodies = new Map<string, FolderJson>()

  constructor(private readonly root: string | null) {}

  private list(parent: string | null): Set<string> {
    const key = parent === this.root || parent === null ? '' : parent
    let list = this.children.get(key)
    if (list === undefined) this.children.set(key, (list = new Set()))
    return list
  }

  /** Where the client holds `id` (checks only). */
  private heldUnder(id: string): string | null | undefined {
    for (const [parent, list] of this.children) {
      if (list.has(id)) return parent === '' ? this.root : parent
    }
    return undefined
  }

  apply(entry: FeedEntry): void {
    if (entry.type === 'owner') {
      for (const f of this.bodies.values()) f.owner = entry.owner
      return
    }
    if (entry.type === 'upsert') {
      const { folder } = entry
      const held = this.heldUnder(folder.id)
      if (entry.previous_folder_id !== undefined) {
        assert.notEqual(
          entry.previous_folder_id,
          folder.folder_id,
          `${folder.id}: previous_folder_id is its parent`,
        )
        assert.equal(
          held,
          entry.previous_folder_id,
          `${folder.id}: upsert from ${String(entry.previous_folder_id)}, held under ${String(held)}`,
        )
        this.list(entry.previous_folder_id).delete(folder.id)
      } else {
        assert.ok(
          held === undefined || held === folder.folder_id,
          `${folder.id}: upsert under ${String(folder.folder_id)} without previous_folder_id, held under ${String(held)}`,
        )
      }
      this.list(folder.folder_id).add(folder.id)
      this.bodies.set(folder.id, folder)
      return
    }
    const parent = entry.folder_id
    assert.ok(parent !== undefined, `remove of ${entry.id} without folder_id`)
    assert.ok(
      this.list(parent).has(entry.id),
      `remove of ${entry.id} under ${String(parent)}, held under ${String(this.heldUnder(entry.id))}`,
    )
    this.list(parent).delete(entry.id)
    const gone = [entry.id]
    while (gone.length > 0) {
      const id = gone.pop() as string
      this.bodies.delete(id)
      gone.push(...(this.children.get(id) ?? []))
      this.children.delete(id)
    }
  }

  /** Every folder reachable from the root through the child lists; none may be held elsewhere. */
  tree(): FolderJson[] {
    const found: FolderJson[] = []
    const queue = [...this.list(this.root)]
    while (queue.length > 0) {
      const id = queue.shift() as string
      const body = this.bodies.get(id)
      assert.ok(body !== undefined, `${id} held in a child list without its body`)
      found.push(body)
      queue.push(...(this.children.get(id) ?? []))
    }
    assert.equal(found.length, this.bodies.size, 'every folder held is reachable from the root')
    return found
  }
}

async function runCase(rig: PropertyRig, ops: Op[], atUserRoot: boolean, stats: TreeReplayStats) {
  const { sql } = rig
  const [owner, other, session] = [randomUUID(), randomUUID(), randomUUID()]
  const [top, outside] = [randomUUID(), randomUUID()]
  let usernames = 0
  const username = () => `tree-${owner.slice(0, 8)}-${usernames++}`
  const get = await openCase(
    rig,
    session,
    [
      { id: owner, username: username() },
      { id: other, username: `other-${other.slice(0, 8)}` },
    ],
    [
      { id: top, name: 'top' },
      { id: outside, name: 'outside' },
    ],
  )
  const root = atUserRoot ? null : top
  const made: string[] = []
  const given: string[] = []
  const picked = (n: number) => made[n % Math.max(made.length, 1)]
  const parentAt = (p: Place): string | null | undefined =>
    p.kind === 'made' ? picked(p.pick) : p.kind === 'root' ? root : atUserRoot ? outside : null

  let client = new ChildListClient(root)
  let cursor: string | null = null
  const treeUrl = (limit: number) =>
    `/v1/folders/tree?limit=${limit}${root === null ? '' : `&root=${root}`}${cursor === null ? '' : `&cursor=${cursor}`}`

  const readOnce = async (limit: number): Promise<boolean> => {
    const body = await readFeed(get, treeUrl(limit), limit, stats, (entry) => {
      if (entry.type === 'upsert' && entry.previous_folder_id !== undefined) stats.moved++
      client.apply(entry)
    })
    const ids = body.changes.flatMap((e) =>
      e.type === 'upsert' ? [e.folder.id] : e.type === 'remove' ? [e.id] : [],
    )
    assert.equal(new Set(ids).size, ids.length, 'a folder appears at most once in one answer')
    cursor = body.cursor
    return body.has_more
  }
  /** The tree by its definition, walked through the listings from `root`. */
  const listed = async () => {
    const found: FolderJson[] = []
    const queue: (string | null)[] = [root]
    while (queue.length > 0) {
      const children = await listAll(get, queue.shift() as string | null)
      found.push(...children)
      queue.push(...children.map((f) => f.id))
    }
    return found
  }
  const byId = (a: FolderJson, b: FolderJson) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  const quiet = async () => {
    let more = true
    // Small answers cut the history short; large ones hold many entries whose order matters.
    for (let i = 0; more && i < 2000; i++) more = await readOnce(stats.checks % 2 === 0 ? 3 : 20)
    assert.equal(more, false, 'the feed reaches the present')
    assert.deepEqual(client.tree().sort(byId), (await listed()).sort(byId))
  }
  const write = async (statement: string, ...params: unknown[]) => {
    try {
      await sql.run(statement, ...params)
      return true
    } catch {
      stats.refused++
      return false
    }
  }

  const step = async (op: Op): Promise<boolean> => {
    const id = 'pick' in op ? picked(op.pick) : undefined
    switch (op.op) {
      case 'create': {
        const parent = parentAt(op.place)
        if (parent === undefined) return false
        const newId = randomUUID()
        try {
          await insertLiveFolder(sql, {
            id: newId,
            name: NAMES[op.name] as string,
            parent,
            owner,
            at: BASE_TIME,
          })
        } catch {
          // Under a folder given away with its subtree (it is the other user's now).
          stats.refused++
          return false
        }
        made.push(newId)
        return true
      }
      case 'rename':
        return (
          id !== undefined && (await write('UPDATE folders SET name = ? WHERE id = ?', NAMES[op.name], id))
        )
      case 'move': {
        const parent = parentAt(op.place)
        if (id === undefined || parent === undefined || parent === id) return false
        // Into its own subtree too: the folder and its subtree then hang from no root at all.
        return write('UPDATE folders SET folder_id = ? WHERE id = ?', parent, id)
      }
      case 'delete':
      case 'undelete': {
        const flag = op.op === 'delete' ? sql.true : sql.false
        return id !== undefined && (await write(`UPDATE folders SET is_deleted = ${flag} WHERE id = ?`, id))
      }
      case 'rowDelete':
        if (id === undefined || !(await write('DELETE FROM folders WHERE id = ?', id))) return false
        made.splice(made.indexOf(id), 1)
        return true
      case 'giveAway':
        // A parent must have the same owner: the folder goes to the other user's root.
        if (
          id === undefined ||
          !(await write('UPDATE folders SET owner_id = ?, folder_id = NULL WHERE id = ?', other, id))
        )
          return false
        made.splice(made.indexOf(id), 1)
        given.push(id)
        return true
      case 'giveBack': {
        const back = given.shift()
        const parent = parentAt(op.place)
        if (back === undefined || parent === undefined) return false
        if (
          !(await write('UPDATE folders SET owner_id = ?, folder_id = ? WHERE id = ?', owner, parent, back))
        ) {
          given.push(back)
          return false
        }
        made.push(back)
        return true
      }
      case 'giveSubtree':
      case 'takeSubtree': {
        // A whole subtree to the other user (its top to their root) or back (its top to
        // `place`), in one statement over its rows, as an operator's console would.
        const [top, to, parent] =
          op.op === 'giveSubtree' ? [id, other, null] : [given.shift(), owner, parentAt(op.place)]
        if (top === undefined || parent === undefined) return false
        const moved = await write(
          `WITH RECURSIVE sub(id) AS (SELECT id FROM folders WHERE id = ?
             UNION SELECT f.id FROM folders AS f JOIN sub ON f.folder_id = sub.id)
           UPDATE folders SET owner_id = ?, folder_id = CASE WHEN id = ? THEN ? ELSE folder_id END
            WHERE id IN (SELECT id FROM sub)`,
          top,
          to,
          top,
          parent,
        )
        if (op.op === 'giveSubtree' && moved) {
          made.splice(made.indexOf(top), 1)
          given.push(top)
        } else if (op.op === 'takeSubtree') (moved ? made : given).push(top)
        return moved
      }
      case 'username':
        await sql.run('UPDATE users SET username = ? WHERE id = ?', username(), owner)
        return true
      case 'rootRow':
        // The followed root's own row (at the user's root, a folder of the tree): renamed,
        // moved under the live folder `outside`, moved back to the user's root.
        return op.how === 0
          ? write('UPDATE folders SET name = ? WHERE id = ?', NAMES[usernames % NAMES.length], top)
          : write('UPDATE folders SET folder_id = ? WHERE id = ?', op.how === 1 ? outside : null, top)
      case 'restart':
        // A new download, started among the writes that follow.
        client = new ChildListClient(root)
        cursor = null
        return false
      case 'read':
        await readOnce(op.limit)
        return false
      case 'check':
        return false
    }
  }
  await replayOps(ops, stats, step, quiet)
}

const at = (pick: number): Place => ({ kind: 'made', pick })

/**
 * Histories run first (within the runs asked for). A folder reached now only through a later change
 * of an ancestor: A and B are put in a cycle (out of the tree), F is created under A, B is
 * moved back under the root, and an answer of one entry reaches F's row; B is then deleted.
 * Sent as an upsert at that row, F stayed with the client, whose remove of B could not
 * reach it (the client never held A or B).
 */
const TREE_REPLAY_EXAMPLES: [Op[], boolean][] = [true, false].map((atUserRoot) => [
  [
    { op: 'create', place: { kind: 'root' }, name: 0 },
    { op: 'create', place: at(0), name: 0 },
    { op: 'move', pick: 0, place: at(1) },
    { op: 'read', limit: 20 },
    { op: 'create', place: at(0), name: 0 },
    { op: 'move', pick: 1, place: { kind: 'root' } },
    { op: 'read', limit: 1 },
    { op: 'delete', pick: 1 },
    { op: 'check' },
  ],
  atUserRoot,
])

export async function runTreeReplayProperty(
  backend: Backend,
  options: { numRuns: number; maxOps: number },
): Promise<TreeReplayStats> {
  const stats: TreeReplayStats = { ...newReplayStats(), refused: 0, moved: 0 }
  await assertOnRawSql(
    backend,
    options.numRuns,
    fc.tuple(
      fc.array(opArb, { minLength: Math.ceil(options.maxOps / 2), maxLength: options.maxOps }),
      fc.boolean(),
    ),
    (rig, [ops, atUserRoot]) => runCase(rig, ops, atUserRoot, stats),
    TREE_REPLAY_EXAMPLES,
  )
  return stats
}

export function treeReplaySummary(s: TreeReplayStats): string {
  return `${s.cases} cases, ${s.writes} raw-SQL writes (${s.refused} refused), ${s.checks} quiet-point checks, entries ${JSON.stringify(s.entries)}, ${s.moved} with previous_folder_id, ${s.cutShort} answers cut short`
}
