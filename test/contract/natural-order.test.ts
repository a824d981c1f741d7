import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import fc from 'fast-check'
import { listingBackends } from '../helpers/databases/backends.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { listBody, problemBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { ALICE, ALICE_SESSION, usersAndSessions } from '../helpers/fixtures/users.js'
import { insertLiveFolder, type RawSql } from '../../harness/raw-sql.js'
import { linkTargets as links } from '../helpers/http/http-asserts.js'
import { CASE_TABLE, compareNatural, naturalNames } from '../helpers/fixtures/natural-rule.js'
import type { Store } from '../../src/store/store.js'
import {
  assertWalkGuarantee,
  listingComparator,
  type ListedChild,
} from '../helpers/fixtures/walk-guarantee.js'

/**
 * `order=name_natural` on every backend: the service's answers are held to the rule as the
 * test restates it (test/helpers/fixtures/natural-rule.ts), for the case table and random names,
 * whether the service or another writer (plain SQL, knowing nothing of the sort key) wrote
 * the names; cursor walks keep the rule while another connection writes; completing the
 * keys other writers left out moves no generation; the parameter, links, cursors and cache
 * follow the order.
 */

const T0 = Date.parse('2026-05-01T00:00:00.000Z')
const DEEP_CHILDREN = 2300

type Child = ListedChild
const byRule = listingComparator(compareNatural)

const dataSet = () => ({
  ...usersAndSessions('alice'),
  folders: [],
})

function hasSqliteCli(): boolean {
  try {
    execFileSync('sqlite3', ['-version'], { stdio: 'pipe' })
    return true
  } catch {
    return false
  }
}

const cursorOf = (url: string) => new URL(url, 'http://x').searchParams.get('cursor') ?? ''

for (const backend of listingBackends()) {
  describe(`${backend.name}: natural order (order=name_natural)`, { skip: backend.skip }, () => {
    let target: Awaited<ReturnType<typeof appWithRawSql>>
    let app: FastifyInstance
    let sql: RawSql
    let store: Store
    let parents = 0

    const ok = async (url: string) => {
      const res = await request(app, { url, session: ALICE_SESSION })
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return res
    }
    /** Follows next from `url` to the end: every folder listed, in the order listed. */
    const walk = async (url: string, between: () => Promise<void> = async () => {}) => {
      const seen: Child[] = []
      for (let next: string | undefined = url, pages = 0; next !== undefined; pages++) {
        assert.ok(pages < 1000, 'the walk ends')
        const res: LightMyRequestResponse = await ok(next)
        for (const f of listBody(res).folders)
          seen.push({ id: f.id, name: f.name, created_at: Date.parse(f.created_at) })
        next = links(res).next
        await between()
      }
      return seen
    }
    /** A new root folder of Alice's, written by plain SQL. */
    const newParent = async () => {
      const id = uuid('a7100000', ++parents)
      await insertLiveFolder(sql, { id, name: `parent ${parents}`, parent: null, owner: ALICE, at: T0 })
      return id
    }
    /** Children of `parent`: even ones by plain SQL (no key), odd ones by the service (with one). */
    const addChildren = async (parent: string, children: Child[]) => {
      for (const [i, c] of children.entries()) {
        if (i % 2 === 0) {
          await insertLiveFolder(sql, { id: c.id, name: c.name, parent, owner: ALICE, at: c.created_at })
        } else {
          await store.addFolder({
            id: c.id,
            name: c.name,
            folder_id: parent,
            owner_id: ALICE,
            is_deleted: false,
            created_at: c.created_at,
            updated_at: c.created_at,
          })
        }
      }
    }
    const natural = (parent: string, extra = '') =>
      `/v1/folders?folder_id=${parent}&order=name_natural${extra}`
    const names = async (url: string) => listBody(await ok(url)).folders.map((f) => f.name)
    const generation = () => sql.value('SELECT listing_generation FROM users WHERE id = ?', ALICE)
    const logRows = () => sql.value('SELECT count(*) FROM folder_changes WHERE owner_id = ?', ALICE)

    before(async () => {
      target = await appWithRawSql(backend, dataSet(), T0)
      ;({ app, sql, store } = target)
    })
    after(() => target.close())

    it('orders every group of the case table as the rule does', async () => {
      for (const [g, group] of CASE_TABLE.entries()) {
        const parent = await newParent()
        // written last to first, and each name twice: ties broken by created_at, then id
        const children = [...group].reverse().flatMap((name, i) => [
          { id: uuid(`a72${String(g).padStart(5, '0')}`, 2 * i), name, created_at: T0 + 1 },
          { id: uuid(`a72${String(g).padStart(5, '0')}`, 2 * i + 1), name, created_at: T0 },
        ])
        await addChildren(parent, children)
        const listed = listBody(await ok(natural(parent, '&limit=100'))).folders
        assert.deepEqual(
          listed.map((f) => f.name),
          group.flatMap((name) => [name, name]),
        )
        assert.deepEqual(
          listed.map((f) => f.id),
          [...children].sort(byRule).map((c) => c.id),
        )
      }
    })

    it('agrees with the rule on random names, walked page by page (property)', async () => {
      let run = 0
      await fc.assert(
        fc.asyncProperty(
          fc.array(naturalNames(), { minLength: 1, maxLength: 25 }),
          fc.integer({ min: 2, max: 9 }),
          async (drawn, limit) => {
            const parent = await newParent()
            run++
            const children = drawn.map((name, i) => ({
              id: uuid(`a73${String(run).padStart(5, '0')}`, i),
              name,
              created_at: T0 + (i % 3),
            }))
            await addChildren(parent, children)
            const seen = await walk(natural(parent, `&limit=${limit}`))
            assert.deepEqual(
              seen.map((c) => c.id),
              [...children].sort(byRule).map((c) => c.id),
            )
          },
        ),
        { numRuns: 15, seed: 20261126 },
      )
    })

    it('sorts names that plain SQL inserts and renames right in the very next answer, moving no generation to do so', async () => {
      const parent = await newParent()
      await addChildren(parent, [
        { id: uuid('a7400000', 1), name: 'file 10', created_at: T0 },
        { id: uuid('a7400000', 2), name: 'file 2', created_at: T0 },
      ])
      assert.deepEqual(await names(natural(parent)), ['file 2', 'file 10'])
      await insertLiveFolder(sql, { id: uuid('a7400000', 3), name: 'File 9', parent, owner: ALICE, at: T0 })
      const [generationBefore, logBefore] = [await generation(), await logRows()]
      assert.deepEqual(await names(natural(parent)), ['file 2', 'File 9', 'file 10'])
      assert.equal(await generation(), generationBefore, 'completing keys is no listed change')
      assert.equal(await logRows(), logBefore, 'completing keys writes no change log row')
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'file 1', uuid('a7400000', 1))
      assert.deepEqual(await names(natural(parent)), ['file 1', 'file 2', 'File 9'])
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'FILE 3', uuid('a7400000', 3))
      assert.deepEqual(await names(natural(parent)), ['file 1', 'file 2', 'FILE 3'])
      assert.equal(
        await sql.value('SELECT count(*) FROM folders WHERE folder_id = ? AND name_key IS NULL', parent),
        0,
        'every listed key is stored',
      )
    })

    it("stores a folder's new key when the service renames it, so the next read completes none", async () => {
      const parent = await newParent()
      await addChildren(parent, [
        { id: uuid('a7b00000', 1), name: 'doc 10', created_at: T0 },
        { id: uuid('a7b00000', 2), name: 'doc 2', created_at: T0 },
      ])
      assert.deepEqual(await names(natural(parent)), ['doc 2', 'doc 10'])
      assert.equal(await store.renameFolder(uuid('a7b00000', 1), 'doc 1', T0 + 1), true)
      const unkeyed = 'SELECT count(*) FROM folders WHERE folder_id = ? AND name_key IS NULL'
      assert.equal(await sql.value(unkeyed, parent), 0, 'the rename stored the key')
      assert.deepEqual(await names(natural(parent)), ['doc 1', 'doc 2'])
    })

    it(
      "sorts right after Debian's sqlite3 command line inserts and renames",
      { skip: backend.name !== 'sqlite' ? 'SQLite only' : !hasSqliteCli() && 'no sqlite3 command line' },
      async (t) => {
        const parent = await newParent()
        const path = target.url.slice('sqlite:'.length)
        const cli = (statement: string) => execFileSync('sqlite3', [path, statement], { stdio: 'pipe' })
        await addChildren(parent, [{ id: uuid('a7900000', 1), name: 'v10', created_at: T0 }])
        try {
          cli(`INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
               VALUES ('${uuid('a7900000', 2)}', 'V9', '${parent}', '${ALICE}', 0, ${T0}, ${T0})`)
        } catch (error) {
          // The change triggers' clock (unixepoch('subsec'), SQLite 3.42) fails on older
          // command lines until the triggers get a portable clock: nothing of this order's.
          if (!String(error).includes('users.listing_generation')) throw error
          t.skip("this sqlite3 cannot run the change triggers' clock")
          return
        }
        assert.deepEqual(await names(natural(parent)), ['V9', 'v10'])
        cli(`UPDATE folders SET name = 'v100' WHERE id = '${uuid('a7900000', 2)}'`)
        assert.deepEqual(await names(natural(parent)), ['v10', 'v100'])
      },
    )

    it('keeps the rule on a deep offset page (checkpoints) and at the root', async () => {
      const parent = await newParent()
      const children = Array.from({ length: DEEP_CHILDREN }, (_, i) => ({
        id: uuid('a7600000', i),
        name: `${i % 2 === 0 ? 'Doc' : 'doc'} ${(i * 7919) % DEEP_CHILDREN}`,
        created_at: T0,
      }))
      await store.importData({
        users: [],
        sessions: [],
        files: [],
        folders: children.map((c, i) => ({
          at: `folders[${i}]`,
          row: { ...c, folder_id: parent, owner_id: ALICE, is_deleted: false, updated_at: T0 },
        })),
      })
      assert.equal(
        await sql.value('SELECT count(*) FROM folders WHERE folder_id = ? AND name_key IS NULL', parent),
        0,
        'the import stored every key',
      )
      const expected = [...children].sort(byRule)
      for (const page of [1, 44, 46]) {
        const listed = listBody(await ok(natural(parent, `&limit=50&page=${page}`))).folders
        assert.deepEqual(
          listed.map((f) => f.id),
          expected.slice((page - 1) * 50, page * 50).map((c) => c.id),
          `page ${page}`,
        )
      }
      const roots = listBody(await ok('/v1/folders?order=name_natural&limit=100')).folders
      const rootChildren = roots.map((f) => ({
        id: f.id,
        name: f.name,
        created_at: Date.parse(f.created_at),
      }))
      assert.deepEqual(rootChildren, [...rootChildren].sort(byRule))
      assert.ok(roots.length > 10)
    })

    it('never repeats or misses a folder that stayed, while another connection writes (property)', async () => {
      let run = 0
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              kind: fc.constantFrom('insert', 'rename', 'delete'),
              pick: fc.nat(),
              name: naturalNames(),
            }),
            { minLength: 5, maxLength: 30 },
          ),
          fc.integer({ min: 2, max: 8 }),
          async (writes, limit) => {
            run++
            const parent = await newParent()
            const children = fc
              .sample(naturalNames(), { numRuns: 30, seed: run })
              .map((name, i) => ({ id: uuid(`a75${String(run).padStart(5, '0')}`, i), name, created_at: T0 }))
            await addChildren(parent, children)
            const live = children.map((c) => c.id)
            const touched = new Set<string>()
            let step = 0
            const seen = await walk(natural(parent, `&limit=${limit}`), async () => {
              for (const w of writes.slice(step * 2, step * 2 + 2)) {
                const pick = live[w.pick % live.length] as string
                if (w.kind === 'insert') {
                  const id = uuid(`a76${String(run).padStart(5, '0')}`, step * 2 + writes.indexOf(w))
                  await insertLiveFolder(sql, { id, name: w.name, parent, owner: ALICE, at: T0 })
                } else if (w.kind === 'rename') {
                  await sql.run('UPDATE folders SET name = ? WHERE id = ?', w.name, pick)
                  touched.add(pick)
                } else {
                  await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, pick)
                  touched.add(pick)
                }
              }
              step++
            })
            assertWalkGuarantee(seen, children, touched, byRule)
          },
        ),
        { numRuns: 6, seed: 20261127 },
      )
    })

    it('goes on past a long boundary name renamed away, without skipping', async () => {
      const parent = await newParent()
      // 200+ bytes: the token holds only a prefix and a digest; natural order puts 9 before 10
      const long = (i: number) => `L${'é'.repeat(100)} ${i}`
      const children = [9, 10, 11, 12, 13].map((n, i) => ({
        id: uuid('a7700000', i),
        name: long(n),
        created_at: T0,
      }))
      await addChildren(parent, children)
      const page1 = await ok(natural(parent, '&limit=2'))
      assert.deepEqual(
        listBody(page1).folders.map((f) => f.name),
        [long(9), long(10)],
      )
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', 'renamed', uuid('a7700000', 1))
      const rest = await walk(links(page1).next as string)
      for (const n of [11, 12, 13])
        assert.ok(
          rest.some((c) => c.name === long(n)),
          `${n} is not skipped`,
        )
    })

    it('carries the order in its links, refuses a cursor of the other order, and caches each order apart', async () => {
      const parent = await newParent()
      await addChildren(
        parent,
        ['b', 'B10', 'a2', 'A1', 'a10', 'c'].map((name, i) => ({
          id: uuid('a7800000', i),
          name,
          created_at: T0,
        })),
      )
      const naturalPage = await ok(natural(parent, '&limit=2'))
      const namePage = await ok(`/v1/folders?folder_id=${parent}&limit=2`)
      for (const rel of ['first', 'next', 'last']) {
        assert.match(links(naturalPage)[rel] as string, /[?&]order=name_natural&/, rel)
        assert.doesNotMatch(links(namePage)[rel] as string, /order=/, rel)
      }
      assert.deepEqual(
        listBody(naturalPage).folders.map((f) => f.name),
        ['A1', 'a2'],
      )
      assert.deepEqual(
        listBody(await ok(links(naturalPage).next as string)).folders.map((f) => f.name),
        ['a10', 'b'],
      )
      assert.notEqual(naturalPage.headers.etag, namePage.headers.etag)
      const reads = target.reads()
      assert.equal((await ok(natural(parent, '&limit=2'))).body, naturalPage.body)
      assert.equal((await ok(`/v1/folders?folder_id=${parent}&limit=2`)).body, namePage.body)
      assert.equal(target.reads(), reads, 'both answers came from the cache')
      const nameCursor = cursorOf(links(namePage).next as string)
      const naturalCursor = cursorOf(links(naturalPage).next as string)
      for (const query of [
        `folder_id=${parent}&order=name_natural&cursor=${nameCursor}`,
        `folder_id=${parent}&cursor=${naturalCursor}`,
        `folder_id=${parent}&order=name&cursor=${naturalCursor}`,
      ]) {
        const res = await request(app, { query, session: ALICE_SESSION })
        assert.equal(res.statusCode, 400, query)
        assert.match(problemBody(res).detail, /'cursor'/)
      }
    })

    it('refuses any other order value with 400 naming order', async () => {
      for (const order of [
        'order=',
        'order=NAME',
        'order=natural',
        'order=name_natural%20',
        'order=name&order=name',
        'order=name&order=name_natural',
        'order[]=name',
      ]) {
        const res = await request(app, { query: order, session: ALICE_SESSION })
        if (order === 'order[]=name') {
          assert.equal(res.statusCode, 200, 'an unknown parameter is ignored')
          continue
        }
        assert.equal(res.statusCode, 400, order)
        assert.match(String(res.headers['content-type']), /^application\/problem\+json/)
        const problem = problemBody(res)
        assert.equal(problem.code, 'INVALID_INPUT')
        assert.match(problem.detail, /'order'/, order)
      }
      assert.equal((await request(app, { query: 'order=name', session: ALICE_SESSION })).statusCode, 200)
    })
  })
}
