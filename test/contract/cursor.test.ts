import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import fc from 'fast-check'
import { validateImport } from '../../src/import/validate-import.js'
import { listingBackends, throughPooler } from '../helpers/databases/backends.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { appOver, listBody, problemBody, request, type FolderListJson } from '../helpers/apps/test-app.js'
import { compareCodePoints } from '../../src/ordering/code-points.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { insertLiveFolder, type RawSql } from '../../harness/raw-sql.js'
import { linkTargets } from '../helpers/http/http-asserts.js'
import {
  assertWalkGuarantee,
  listingComparator,
  type ListedChild,
} from '../helpers/fixtures/walk-guarantee.js'
import { ALICE, BOB, ALICE_SESSION, BOB_SESSION } from '../helpers/fixtures/users.js'

/**
 * Continuation tokens (`cursor` in the next and prev links): walks that follow them list
 * every folder once, in order, equal to the offset pages while nothing changes; walks made
 * while another connection writes never repeat or miss a folder that stayed; every token the
 * deployment did not make for this user and folder is 400; the check order holds.
 */

const CAROL = uuid('c0000000', 3)
const CAROL_SESSION = uuid('c5000000', 3)
const BIG = uuid('c1000000', 1)
const SMALL = uuid('c1000000', 2)
const BOBS = uuid('c1000000', 3)
const T0 = Date.parse('2026-04-01T00:00:00.000Z')

/** Names longer than a token holds (200+ bytes), all sharing their first 123 bytes. */
const longName = (i: number) => `L${'é'.repeat(100)}${i}`
const LONG = 6
const TIES = 50

type Child = ListedChild

/** BIG's children: six long names, 50 names three times each (ties), a few astral ones. */
function bigChildren(): Child[] {
  const children: Child[] = []
  for (let i = 0; i < LONG; i++) children.push({ id: uuid('c2000000', i), name: longName(i), created_at: T0 })
  for (let i = 0; i < TIES * 3; i++) {
    // Ties on name, broken by created_at and then by id (the last two share created_at).
    const name = `f-${String(i % TIES).padStart(2, '0')}`
    children.push({ id: uuid('c3000000', 1000 - i), name, created_at: T0 + Math.min(i / TIES, 1) * 1000 })
  }
  for (let i = 0; i < 4; i++) children.push({ id: uuid('c4000000', i), name: `😀 ${i}`, created_at: T0 })
  return children
}

const byListingOrder = listingComparator(compareCodePoints)

function dataSet() {
  const iso = (ms: number) => new Date(ms).toISOString()
  const folder = (id: string, name: string, owner: string, parent: string | null, created = T0) => ({
    id,
    name,
    owner_id: owner,
    folder_id: parent,
    created_at: iso(created),
    updated_at: iso(created),
  })
  return {
    users: [
      { id: ALICE, username: 'alice' },
      { id: BOB, username: 'bob' },
      { id: CAROL, username: 'carol', is_suspended: true },
    ],
    sessions: [
      { id: ALICE_SESSION, user_id: ALICE },
      { id: BOB_SESSION, user_id: BOB },
      { id: CAROL_SESSION, user_id: CAROL },
    ],
    folders: [
      folder(BIG, 'big', ALICE, null),
      folder(SMALL, 'small', ALICE, null),
      folder(BOBS, 'bobs', BOB, null),
      ...bigChildren().map((c) => folder(c.id, c.name, ALICE, BIG, c.created_at)),
      ...[0, 1, 2, 3, 4].map((i) => folder(uuid('c5100000', i), `s${i}`, ALICE, SMALL)),
      ...[0, 1, 2].map((i) => folder(uuid('c5200000', i), `b${i}`, BOB, BOBS)),
    ],
  }
}

const links = linkTargets

const cursorOf = (url: string) => new URL(url, 'http://x').searchParams.get('cursor') ?? ''

for (const backend of throughPooler(listingBackends())) {
  describe(`${backend.name}: cursor (continuation tokens)`, { skip: backend.skip }, () => {
    let target: Awaited<ReturnType<typeof appWithRawSql>>
    let app: FastifyInstance
    let reads: () => number
    let sql: RawSql
    const expected = bigChildren().sort(byListingOrder)

    const get = (url: string, session = ALICE_SESSION) => request(app, { url, session })
    const ok = async (url: string, session = ALICE_SESSION) => {
      const res = await get(url, session)
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return res
    }
    /** Follows `rel` from `url` to the end: every page's response. */
    const follow = async (url: string, rel: 'next' | 'prev') => {
      const pages: LightMyRequestResponse[] = []
      for (let next: string | undefined = url; next !== undefined; next = links(pages.at(-1) as never)[rel]) {
        pages.push(await ok(next))
        assert.ok(pages.length < 1000, 'the walk ends')
      }
      return pages
    }
    const bad = async (query: string, session = ALICE_SESSION) => {
      const res = await request(app, { query, session })
      assert.equal(res.statusCode, 400, `${query}: ${res.body}`)
      const problem = problemBody(res)
      assert.equal(problem.code, 'INVALID_INPUT')
      assert.match(problem.detail, /'cursor'/)
      return problem
    }

    before(async () => {
      target = await appWithRawSql(backend, dataSet(), T0)
      ;({ app, reads, sql } = target)
    })
    after(() => target.close())

    it('walks next from page 1 to the end: every folder once, in order, page for page the offset pages', async () => {
      const pages = await follow(`/v1/folders?folder_id=${BIG}&limit=7`, 'next')
      assert.equal(pages.length, Math.ceil(expected.length / 7))
      const walked = pages.flatMap((res) => listBody(res).folders.map((f) => f.id))
      assert.deepEqual(
        walked,
        expected.map((c) => c.id),
      )
      for (const [i, res] of pages.entries()) {
        const body = listBody(res)
        assert.equal(body.page, i + 1)
        assert.equal(body.total, expected.length)
        const offset = await ok(`/v1/folders?folder_id=${BIG}&limit=7&page=${i + 1}`)
        assert.deepEqual(body, listBody(offset), `page ${i + 1} by cursor equals the offset page`)
        if (i > 0) assert.notEqual(cursorOf(links(res).prev ?? ''), '', 'prev carries a cursor')
      }
      assert.equal(links(pages.at(-1) as never).next, undefined)
    })

    it('walks prev back from the last page to page 1, equal to the offset pages', async () => {
      const forward = await follow(`/v1/folders?folder_id=${BIG}&limit=9`, 'next')
      const back = await follow(links(forward.at(-1) as never).prev as string, 'prev')
      assert.equal(back.length, forward.length - 1)
      for (const res of back) {
        const body = listBody(res)
        assert.deepEqual(body, listBody(forward[body.page - 1] as never))
      }
      assert.equal(listBody(back.at(-1) as never).page, 1)
      assert.equal(links(back.at(-1) as never).prev, undefined, 'nothing before page 1')
    })

    it('answers a repeated cursor request from the cache', async () => {
      const next = links(await ok(`/v1/folders?folder_id=${BIG}&limit=5`)).next as string
      const first = await ok(next)
      const before = reads()
      const again = await ok(next)
      assert.equal(reads(), before, 'the same cursor request again reads nothing')
      assert.equal(again.body, first.body)
      assert.equal(again.headers.link, first.headers.link)
    })

    it('goes on from where a deleted or renamed boundary folder stood', async () => {
      // Page 1 of limit 10 ends on a short name: f-01 (the first of its three ties).
      const page1 = await ok(`/v1/folders?folder_id=${BIG}&limit=10`)
      const boundary = listBody(page1).folders.at(-1) as FolderListJson['folders'][number]
      const next = links(page1).next as string
      const rest = listBody(await ok(next)).folders.map((f) => f.id)
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, boundary.id)
      assert.deepEqual(
        listBody(await ok(next)).folders.map((f) => f.id),
        rest,
      )
      await sql.run(`UPDATE folders SET is_deleted = ${sql.false}, name = ? WHERE id = ?`, 'zz', boundary.id)
      assert.deepEqual(
        listBody(await ok(next)).folders.map((f) => f.id),
        rest,
      )
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', boundary.name, boundary.id)
    })

    it('finds a long boundary name again from its digest, and never skips when it is renamed', async () => {
      const page1 = await ok(`/v1/folders?folder_id=${BIG}&limit=3`)
      const boundary = listBody(page1).folders.at(-1) as FolderListJson['folders'][number]
      assert.equal(boundary.name, longName(2))
      const next = links(page1).next as string
      assert.ok(next.length < 400 && cursorOf(next).length <= 256)
      const ids = expected.map((c) => c.id)
      assert.deepEqual(
        listBody(await ok(next)).folders.map((f) => f.id),
        ids.slice(3, 6),
      )
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, boundary.id)
      assert.deepEqual(
        listBody(await ok(next)).folders.map((f) => f.id),
        ids.slice(3, 6),
        'a deleted folder keeps its name: exact',
      )
      await sql.run(
        `UPDATE folders SET is_deleted = ${sql.false}, name = ? WHERE id = ?`,
        'renamed',
        boundary.id,
      )
      const walked = (await follow(next, 'next')).flatMap((res) => listBody(res).folders.map((f) => f.id))
      for (const id of ids.slice(3)) assert.ok(walked.includes(id), `${id} is not skipped`)
      const repeated = walked.filter((id) => ids.indexOf(id) < 3)
      for (const id of repeated) {
        assert.ok(
          expected.find((c) => c.id === id)?.name.startsWith('L'),
          'only names sharing the long prefix may repeat',
        )
      }
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', boundary.name, boundary.id)
    })

    it('never repeats or misses a folder that stayed, while another connection writes (property)', async () => {
      let run = 0
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              kind: fc.constantFrom('insert', 'rename', 'delete', 'undelete'),
              pick: fc.nat(),
              name: fc
                .array(fc.constantFrom('a', 'B', 'é', '😀', 'f-01', 'L', 'z', ' ', '0'), {
                  minLength: 1,
                  maxLength: 4,
                })
                .map((parts) => parts.join('').trim() || 'x'),
            }),
            { minLength: 5, maxLength: 40 },
          ),
          fc.integer({ min: 3, max: 12 }),
          async (writes, limit) => {
            run++
            // A fresh parent per run, so runs do not see each other's writes.
            const parent = uuid('c6000000', run)
            const children = expected
              .slice(0, 40)
              .map((c, i) => ({ ...c, id: uuid(`c7${String(run).padStart(6, '0')}`, i) }))
            await insertLiveFolder(sql, {
              id: parent,
              name: `walk-${run}`,
              parent: null,
              owner: ALICE,
              at: T0,
            })
            for (const c of children) {
              await insertLiveFolder(sql, { id: c.id, name: c.name, parent, owner: ALICE, at: c.created_at })
            }
            // The model: which folders are touched (renamed, deleted, inserted) by the writes.
            const touched = new Set<string>()
            const live = new Set(children.map((c) => c.id))
            const deleted = new Set<string>()
            let inserted = 0
            const seen: { id: string; name: string; created_at: number }[] = []
            let url: string | undefined = `/v1/folders?folder_id=${parent}&limit=${limit}`
            let step = 0
            while (url !== undefined) {
              const res = await ok(url)
              for (const f of listBody(res).folders) {
                seen.push({ id: f.id, name: f.name, created_at: Date.parse(f.created_at) })
              }
              url = links(res).next
              // Between pages, one or two writes by another connection.
              for (const w of writes.slice(step * 2, step * 2 + 2)) {
                const pool = w.kind === 'undelete' ? [...deleted] : [...live]
                const target = pool[w.pick % Math.max(pool.length, 1)]
                if (w.kind === 'insert') {
                  const id = uuid('c8000000', run * 1000 + inserted++)
                  await insertLiveFolder(sql, { id, name: w.name, parent, owner: ALICE, at: T0 })
                  touched.add(id)
                } else if (target !== undefined && w.kind === 'rename') {
                  await sql.run('UPDATE folders SET name = ? WHERE id = ?', w.name, target)
                  touched.add(target)
                } else if (target !== undefined && w.kind === 'delete') {
                  await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, target)
                  live.delete(target)
                  deleted.add(target)
                  touched.add(target)
                } else if (target !== undefined && w.kind === 'undelete') {
                  await sql.run(`UPDATE folders SET is_deleted = ${sql.false} WHERE id = ?`, target)
                  deleted.delete(target)
                  live.add(target)
                }
              }
              step++
            }
            // Every key seen comes strictly after the one before it: no folder twice at one place.
            assertWalkGuarantee(seen, children, touched, byListingOrder)
          },
        ),
        { numRuns: 8, seed: 20261123 },
      )
    })

    it('refuses every token it did not make for this user and folder with 400 naming cursor', async () => {
      const next = links(await ok(`/v1/folders?folder_id=${BIG}&limit=5`)).next as string
      const token = cursorOf(next)
      assert.match(token, /^[A-Za-z0-9_-]{1,256}$/)
      const flip = (i: number) => token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1)
      for (const cursor of [
        token.slice(0, -1),
        token.slice(0, 20),
        flip(0),
        flip(Math.floor(token.length / 2)),
        flip(token.length - 1),
        'abc',
        'A'.repeat(257),
        'a+b/c=',
        '',
        `${token}%00`,
      ]) {
        await bad(`folder_id=${BIG}&limit=5&cursor=${cursor}`)
      }
      await bad(`folder_id=${BIG}&limit=5&cursor=${token}&cursor=${token}`)
      // Made for alice's BIG: not for another folder, the root or another user.
      await bad(`folder_id=${SMALL}&limit=5&cursor=${token}`)
      await bad(`limit=5&cursor=${token}`)
      await bad(`folder_id=${BIG}&limit=5&cursor=${token}`, BOB_SESSION)
      // The same data in another database: its tokens are sealed under another key.
      const other = await backend.open()
      try {
        await other.store.importData(validateImport(dataSet(), T0))
        const otherApp = await appOver(other.store)
        const res = await request(otherApp, { query: `folder_id=${BIG}&limit=5`, session: ALICE_SESSION })
        const foreign = cursorOf(links(res).next as string)
        await otherApp.close()
        await bad(`folder_id=${BIG}&limit=5&cursor=${foreign}`)
      } finally {
        await other.cleanup()
      }
    })

    it('keeps the check order with a cursor: 401, 403, 400, 404', async () => {
      const garbage = 'A'.repeat(40)
      const noCookie = await request(app, { query: `folder_id=${BIG}&cursor=${garbage}` })
      assert.equal(noCookie.statusCode, 401)
      const frozen = await request(app, {
        query: `folder_id=${BIG}&cursor=${garbage}`,
        session: CAROL_SESSION,
      })
      assert.equal(frozen.statusCode, 403)
      await bad(`folder_id=${uuid('dead0000', 1)}&cursor=${garbage}`)
      // A good token of a folder deleted since: 404, like any request for that folder.
      const next = links(await ok(`/v1/folders?folder_id=${SMALL}&limit=2`)).next as string
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, SMALL)
      const gone = await get(next)
      assert.equal(gone.statusCode, 404)
      assert.equal(problemBody(gone).code, 'NOT_FOUND')
      await sql.run(`UPDATE folders SET is_deleted = ${sql.false} WHERE id = ?`, SMALL)
      assert.equal((await get(next)).statusCode, 200)
    })

    it("never shows another user's folders through a token", async () => {
      const next = links(await ok(`/v1/folders?folder_id=${BOBS}&limit=1`, BOB_SESSION)).next as string
      const stolen = await get(next, ALICE_SESSION)
      assert.equal(stolen.statusCode, 400, 'a token of bob is no use to alice')
      assert.doesNotMatch(stolen.body, /b[0-2]"/)
    })
  })
}
