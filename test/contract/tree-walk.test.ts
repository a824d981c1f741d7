import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { Store, TreePath } from '../../src/store/store.js'
import { FULL_PATH_LEVELS } from '../../src/store/tree-walk.js'
import { allBackends } from '../helpers/databases/backends.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'

/**
 * The tree download's walk (src/store/tree-walk.ts) through Store.readTreePage, against a
 * model: a pre-order walk, siblings by id, so parents come first, the same at every page
 * size, through a chain deeper than a cursor keeps whole; and when a folder on the cursor's
 * path is moved or deleted between two pages (plain SQL on a second connection), the rest
 * of the download is the tree as it is now from the cursor's place on: every folder after
 * the cursor's path is sent, none before it is skipped or left out.
 */

/** parent by id, for the live folders */
type Model = Map<string, string | null>

function children(model: Model, parent: string | null): string[] {
  return [...model]
    .filter(([, p]) => p === parent)
    .map(([id]) => id)
    .sort()
}

function preOrder(model: Model, top: string | null = null): string[] {
  return children(model, top).flatMap((id) => [id, ...preOrder(model, id)])
}

function pathOf(model: Model, id: string): string[] {
  const path = [id]
  for (let p = model.get(id); p !== null && p !== undefined; p = model.get(p)) path.unshift(p)
  return path
}

/** Whether path a comes after path b in the walk's order (a path comes before its extensions). */
function after_(a: string[], b: string[]): boolean {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return (a[i] as string) > (b[i] as string)
  }
  return a.length > b.length
}

/**
 * The tree: r1 with two children, r2 holding a chain c1..c10 (each c_i also holding a
 * leaf), r3 empty: 25 folders, the chain 11 levels deep.
 */
async function build(sql: RawSql, owner: string): Promise<{ model: Model; chain: string[]; r1: string }> {
  const model: Model = new Map()
  const add = async (parent: string | null) => {
    const id = randomUUID()
    await insertLiveFolder(sql, { id, name: 'f', parent, owner, at: Date.now() })
    model.set(id, parent)
    return id
  }
  const r1 = await add(null)
  await add(r1)
  await add(r1)
  const r2 = await add(null)
  await add(null)
  const chain: string[] = []
  let parent = r2
  for (let i = 0; i < 10; i++) {
    parent = await add(parent)
    chain.push(parent)
    await add(parent)
  }
  return { model, chain, r1 }
}

for (const backend of allBackends()) {
  describe(`${backend.name}: the tree download's walk`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let store: Store
    let sql: RawSql

    before(async () => {
      opened = await backend.open()
      store = opened.store
      sql = await openRawSql(opened.url)
    })
    after(async () => {
      await sql?.close()
      await opened?.cleanup()
    })

    const user = async () => {
      const id = randomUUID()
      await sql.run(
        `INSERT INTO users (id, username, is_suspended, created_at, updated_at)
         VALUES (?, ?, ${sql.false}, ${sql.time}, ${sql.time})`,
        id,
        `u${id.slice(0, 8)}`,
        Date.now(),
        Date.now(),
      )
      return id
    }

    /** One page: its folders' ids and where the next resumes (null: the walk is done). */
    async function page(owner: string, from: TreePath | null, limit: number) {
      const read = await store.readTreePage({
        ownerId: owner,
        rootId: null,
        subtreeOf: null,
        after: from,
        limit,
      })
      assert.equal(read.outcome, 'page')
      if (read.outcome !== 'page') throw new Error('unreachable')
      assert.ok(read.folders.length <= limit)
      assert.equal(read.last === null, !read.more, 'a next place exactly when more follow')
      return { ids: read.folders.map((f) => f.id), next: read.more ? read.last : null }
    }

    async function rest(owner: string, from: TreePath | null, limit: number): Promise<string[]> {
      const ids: string[] = []
      let at = from
      let pages = 0
      do {
        assert.ok(++pages <= 200, 'the walk ends')
        const read = await page(owner, at, limit)
        ids.push(...read.ids)
        at = read.next
      } while (at !== null)
      return ids
    }

    it('is a pre-order walk, siblings by id, the same at every page size', async () => {
      const owner = await user()
      const { model, chain } = await build(sql, owner)
      const expected = preOrder(model)
      for (const limit of [1, 2, 3, 7, 25, 100]) {
        const ids = await rest(owner, null, limit)
        assert.deepEqual(ids, expected, `limit ${limit}`)
        ids.forEach((id, i) => {
          const parent = model.get(id) ?? null
          assert.ok(parent === null || ids.indexOf(parent) < i, 'a parent before its children')
        })
      }
      // A page boundary at every level of the chain, deeper than a cursor keeps whole.
      assert.ok(chain.length + 1 > FULL_PATH_LEVELS)
      for (let n = 1; n <= expected.length; n++) {
        const first = await page(owner, null, n)
        if (first.next === null) break
        assert.equal(first.next.depth, pathOf(model, first.ids.at(-1) as string).length)
        assert.deepEqual(
          [...first.ids, ...(await rest(owner, first.next, 4))],
          expected,
          `boundary after ${n}`,
        )
      }
    })

    for (const change of ['moved to the root', 'moved under another folder', 'deleted'] as const) {
      it(`goes on from the cursor's place when a folder on its path is ${change} between pages`, async () => {
        let cases = 0
        for (let sent = 1; sent <= 25; sent++) {
          for (const pick of ['top', 'middle', 'last'] as const) {
            const owner = await user()
            const { model, r1 } = await build(sql, owner)
            const first = await page(owner, null, sent)
            if (first.next === null) continue
            const cursorPath = pathOf(model, first.ids.at(-1) as string)
            const level =
              pick === 'top' ? 0 : pick === 'last' ? cursorPath.length - 1 : cursorPath.length >> 1
            const target = cursorPath[level] as string
            if (change === 'deleted') {
              await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, target)
              for (const id of preOrder(model, target)) model.delete(id)
              model.delete(target)
            } else {
              const to = change === 'moved to the root' ? null : r1
              if (to === target || pathOf(model, r1).includes(target)) continue
              await sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', to, target)
              model.set(target, to)
            }
            cases++
            const now = preOrder(model)
            const remaining = await rest(owner, first.next, 2)
            const label = `${sent} sent, level ${level + 1} of ${cursorPath.length} ${change}`
            // The tree as it is now, in order, from some place on ...
            assert.deepEqual(remaining, now.slice(now.length - remaining.length), label)
            // ... that place being the cursor's: every folder after its path, and (a path
            // kept whole) nothing before it.
            const later = now.filter((id) => after_(pathOf(model, id), cursorPath))
            if (cursorPath.length <= FULL_PATH_LEVELS) assert.deepEqual(remaining, later, label)
            else assert.deepEqual(remaining.slice(remaining.length - later.length), later, label)
          }
        }
        assert.ok(cases >= 40, `${cases} cases`)
      })
    }
  })
}
