import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { allBackends, throughPooler } from '../helpers/databases/backends.js'
import { appWithRawSql } from '../helpers/apps/counting-store.js'
import { linkTargets } from '../helpers/http/http-asserts.js'
import { listBody, problemBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { insertLiveFolder, type RawSql } from '../../harness/raw-sql.js'
import { ALICE, ALICE_SESSION, usersAndSessions } from '../helpers/fixtures/users.js'

/**
 * Corners of continuation tokens: a cursor page that comes back empty keeps cursor links
 * (an offset fallback repeated a folder); a token is accepted in exactly one spelling; links
 * never leave the accepted page range.
 */

const PARENT = uuid('cc100000', 1)
const T0 = Date.parse('2026-05-01T00:00:00.000Z')
/** The children A..K of the scenario. */
const LETTERS = 'ABCDEFGHIJK'.split('')
const childId = (i: number) => uuid('cc200000', i)

function dataSet() {
  const at = new Date(T0).toISOString()
  const folder = (id: string, name: string, parent: string | null) => ({
    id,
    name,
    owner_id: ALICE,
    folder_id: parent,
    created_at: at,
    updated_at: at,
  })
  return {
    ...usersAndSessions('alice'),
    folders: [folder(PARENT, 'parent', null), ...LETTERS.map((name, i) => folder(childId(i), name, PARENT))],
  }
}

const links = linkTargets

const param = (url: string, name: string) => new URL(url, 'http://x').searchParams.get(name)
const names = (res: LightMyRequestResponse) => listBody(res).folders.map((f) => f.name)
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

for (const backend of throughPooler(allBackends())) {
  describe(`${backend.name}: cursor corners`, { skip: backend.skip }, () => {
    let target: Awaited<ReturnType<typeof appWithRawSql>>
    let app: FastifyInstance
    let sql: RawSql

    const ok = async (url: string) => {
      const res = await request(app, { url, session: ALICE_SESSION })
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return res
    }

    before(async () => {
      target = await appWithRawSql(backend, dataSet(), T0)
      ;({ app, sql } = target)
    })
    after(() => target.close())

    it('lists every folder once when a cursor page comes back empty (A..K, limit 2, K deleted after I,J)', async () => {
      try {
        await walkThroughTheChange()
      } finally {
        // Back to the scenario's starting point for the other tests.
        await sql.run(`UPDATE folders SET is_deleted = ${sql.false} WHERE id = ?`, childId(10))
        await sql.run(`DELETE FROM folders WHERE name IN ('0a', '0b', '0c')`)
      }
    })

    async function walkThroughTheChange() {
      const walked: string[] = []
      let url: string | undefined = `/v1/folders?folder_id=${PARENT}&limit=2`
      let emptyPage: LightMyRequestResponse | undefined
      let changed = false
      for (let requests = 0; url !== undefined; requests++) {
        assert.ok(requests < 20, 'the walk ends')
        const res = await ok(url)
        walked.push(...names(res))
        if (listBody(res).folders.length === 0) emptyPage = res
        if (!changed && walked.at(-1) === 'J') {
          // After the page (I, J): K goes, three folders that sort first come.
          changed = true
          await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id = ?`, childId(10))
          for (const [i, name] of ['0a', '0b', '0c'].entries()) {
            await insertLiveFolder(sql, {
              id: uuid('cc300000', i),
              name,
              parent: PARENT,
              owner: ALICE,
              at: T0,
            })
          }
        }
        url = links(res).next
      }
      assert.deepEqual(walked, LETTERS.slice(0, 10), 'A..J, each once')
      assert.ok(emptyPage, 'the page after (I, J) is empty')
      const empty = links(emptyPage)
      assert.equal(empty.next, undefined, 'nothing lies after J: no next')
      assert.ok(empty.prev !== undefined && param(empty.prev, 'cursor'), 'prev keeps a cursor')
      assert.deepEqual(names(await ok(empty.prev)), ['I', 'J'], 'prev: the page that ends at J')
    }

    it('keeps cursor links on an empty page reached by prev', async () => {
      const page1 = await ok(`/v1/folders?folder_id=${PARENT}&limit=2`)
      const page2 = await ok(links(page1).next as string)
      // Nothing stays before C: A and B go.
      await sql.run(`UPDATE folders SET is_deleted = ${sql.true} WHERE id IN (?, ?)`, childId(0), childId(1))
      try {
        const empty = await ok(links(page2).prev as string)
        assert.deepEqual(names(empty), [])
        const around = links(empty)
        assert.equal(around.prev, undefined, 'nothing lies before C: no prev')
        assert.ok(around.next !== undefined && param(around.next, 'cursor'), 'next keeps a cursor')
        assert.deepEqual(names(await ok(around.next)), ['C', 'D'], 'next: the page that starts at C')
      } finally {
        await sql.run(
          `UPDATE folders SET is_deleted = ${sql.false} WHERE id IN (?, ?)`,
          childId(0),
          childId(1),
        )
      }
    })

    it('accepts a token in exactly one spelling: appended or changed characters are 400', async () => {
      const next = links(await ok(`/v1/folders?folder_id=${PARENT}&limit=2`)).next as string
      const token = param(next, 'cursor') as string
      const url = (cursor: string) => `/v1/folders?folder_id=${PARENT}&limit=2&cursor=${cursor}`
      await ok(url(token))
      const altered = new Set<string>()
      for (const c of BASE64URL) {
        altered.add(token + c)
        altered.add(token + c + c)
        altered.add(token.slice(0, -1) + c)
      }
      altered.delete(token)
      for (const cursor of altered) {
        const res = await request(app, { url: url(cursor), session: ALICE_SESSION })
        assert.equal(res.statusCode, 400, `${cursor} (from ${token}): ${res.body}`)
        assert.equal(problemBody(res).code, 'INVALID_INPUT')
      }
    })

    it('keeps next inside the accepted page range (page 2147483647 with a cursor)', async () => {
      const next = links(await ok(`/v1/folders?folder_id=${PARENT}&limit=2`)).next as string
      const token = param(next, 'cursor') as string
      const last = await ok(`/v1/folders?folder_id=${PARENT}&limit=2&page=2147483647&cursor=${token}`)
      assert.deepEqual(names(last), ['C', 'D'])
      for (const [rel, link] of Object.entries(links(last))) {
        assert.ok(Number(param(link, 'page')) <= 2147483647, `${rel}: ${link}`)
      }
      const beyond = links(last).next
      assert.ok(beyond !== undefined, 'the walk goes on')
      assert.deepEqual(names(await ok(beyond)), ['E', 'F'])
    })
  })
}
