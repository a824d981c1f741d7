import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { Store, TreeQuery } from '../../src/store/store.js'
import { FULL_PATH_LEVELS } from '../../src/store/tree-walk.js'
import { allBackends } from '../helpers/databases/backends.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'

/**
 * The tree download's walk (src/store/tree-walk.ts) through Store.readTree, against a
 * model: a pre-order walk, siblings by id, so parents come first, the same at every page
 * size, through a chain deeper than a cursor keeps whole; and when a folder on the cursor's
 * path is moved or deleted between two pages and a folder is created below it (plain SQL on
 * a second connection), the download still sends exactly the tree as it was where it
 * began, each folder once, in order: the follow sends the changes after that.
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

    type From = NonNullable<TreeQuery['from']>

    /** One page of a download: its folders' ids and the cursor after it (null: the walk is done). */
    async function page(owner: string, from: From | null, limit: number) {
      const read = await store.readTree({ ownerId: owner, rootId: null, from, limit })
      assert.equal(read.outcome, 'answer')
      if (read.outcome !== 'answer') throw new Error('unreachable')
      assert.ok(read.entries.length <= limit)
      const ids = read.entries.map((entry) => {
        assert.equal(entry.type, 'upsert')
        return entry.type === 'upsert' ? entry.folder.id : ''
      })
      const next = read.expansion === null ? null : { position: read.position, expansion: read.expansion }
      return { ids, next, path: read.expansion?.after ?? null }
    }

    async function rest(owner: string, from: From | null, limit: number): Promise<string[]> {
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
        assert.equal(first.path?.depth, pathOf(model, first.ids.at(-1) as string).length)
        assert.deepEqual(
          [...first.ids, ...(await rest(owner, first.next, 4))],
          expected,
          `boundary after ${n}`,
        )
      }
    })

    for (const change of ['moved to the root', 'moved under another folder', 'deleted'] as const) {
      it(`sends the tree as it was where the download began when a folder on its path is ${change} between pages`, async () => {
        let cases = 0
        for (let sent = 1; sent <= 25; sent++) {
          for (const pick of ['top', 'middle', 'last'] as const) {
            const owner = await user()
            const { model, r1 } = await build(sql, owner)
            const expected = preOrder(model)
            const first = await page(owner, null, sent)
            if (first.next === null) continue
            const cursorPath = pathOf(model, first.ids.at(-1) as string)
            const level =
              pick === 'top' ? 0 : pick === 'last' ? cursorPath.length - 1 : cursorPath.length >> 1
            const target = cursorPath[level] as string
            if (change === 'deleted') {
              await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, target)
            } else {
              const to = change === 'moved to the root' ? null : r1
              if (to === target || pathOf(model, r1).includes(target)) continue
              await sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', to, target)
            }
            // A write by another connection after the first page, and a folder created since.
            await insertLiveFolder(sql, {
              id: randomUUID(),
              name: 'later',
              parent: target,
              owner,
              at: Date.now(),
            })
            cases++
            const label = `${sent} sent, level ${level + 1} of ${cursorPath.length} ${change}`
            // Exactly the tree at the download's position: the rest of its walk, in order.
            assert.deepEqual([...first.ids, ...(await rest(owner, first.next, 2))], expected, label)
          }
        }
        assert.ok(cases >= 40, `${cases} cases`)
      })
    }
  })
}
