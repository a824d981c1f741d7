import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { paginationLinks } from '../../src/http/pagination-links.js'
import {
  PROJECT_CHILDREN,
  PROJECTS,
  ROOT_FOLDERS,
  sessionCookieHeaders,
  useSeededApp,
} from '../helpers/apps/operability-db.js'
import { ALICE_SESSION, CAROL_SESSION } from '../helpers/fixtures/users.js'

/** RFC 8288 Link header of GET /v1/folders: first, prev, next, last, and changes. */

const CURSOR = /&cursor=([A-Za-z0-9_-]{1,256})$/
/** The changes link: the feed of the same folder, a changes cursor and nothing else. */
const CHANGES = /^\/v1\/folders\/changes\?(?:folder_id=([0-9a-f-]{36})&)?cursor=[A-Za-z0-9_-]{1,256}$/

/**
 * rel -> target of a Link header; asserts the exact `<url>; rel="x"` syntax. Continuation
 * tokens (a `cursor` parameter, last, on next and prev only: never on first or last) are
 * checked and cut off, so that the offset arithmetic can be compared exactly; `raw` keeps them.
 * The changes link comes last, exactly once, for the same folder; `raw` keeps it too.
 */
function links(res: LightMyRequestResponse, raw = false): Record<string, string> {
  const header = res.headers.link
  assert.equal(typeof header, 'string', `Link header on ${res.statusCode}`)
  const entries = String(header).split(', ')
  const changes = /^<([^>]+)>; rel="changes"$/.exec(entries.pop() ?? '')?.[1]
  assert.ok(changes !== undefined, `a changes link comes last: ${String(header)}`)
  const changesFolder = CHANGES.exec(changes)
  assert.ok(changesFolder, `well-formed changes link: ${changes}`)
  const parsed: Record<string, string> = raw ? { changes } : {}
  for (const entry of entries) {
    const match = /^<([^>]+)>; rel="(first|prev|next|last)"$/.exec(entry)
    assert.ok(match, `well-formed link: ${entry}`)
    const [, url, rel] = match as unknown as [string, string, string]
    assert.equal(parsed[rel], undefined, `one ${rel}`)
    if (rel === 'first' || rel === 'last') assert.doesNotMatch(url, /cursor=/, `no cursor on ${rel}`)
    parsed[rel] = raw ? url : url.replace(CURSOR, '')
  }
  const folder = /folder_id=([0-9a-f-]{36})/.exec(parsed.first ?? '')?.[1]
  assert.equal(changesFolder[1], folder, 'the changes link follows the listed folder')
  return parsed
}

describe('Link header', () => {
  const ctx = useSeededApp()

  const list = (query: string, session = ALICE_SESSION) =>
    ctx.app.inject({ url: `/v1/folders${query}`, headers: sessionCookieHeaders(session) })

  it(`gives first, next and last on page 1 (total ${ROOT_FOLDERS}, limit 3), no prev`, async () => {
    const res = await list('?limit=3')
    assert.equal(res.statusCode, 200)
    assert.deepEqual(links(res), {
      first: '/v1/folders?page=1&limit=3',
      next: '/v1/folders?page=2&limit=3',
      last: '/v1/folders?page=3&limit=3',
    })
    assert.match(
      String(res.headers.link),
      new RegExp(
        '^</v1/folders\\?page=1&limit=3>; rel="first", ' +
          '</v1/folders\\?page=2&limit=3&cursor=[A-Za-z0-9_-]{1,256}>; rel="next", ' +
          '</v1/folders\\?page=3&limit=3>; rel="last", ' +
          '</v1/folders/changes\\?cursor=[A-Za-z0-9_-]{1,256}>; rel="changes"$',
      ),
    )
  })

  it('gives all four on a middle page', async () => {
    assert.deepEqual(links(await list('?page=2&limit=3')), {
      first: '/v1/folders?page=1&limit=3',
      prev: '/v1/folders?page=1&limit=3',
      next: '/v1/folders?page=3&limit=3',
      last: '/v1/folders?page=3&limit=3',
    })
  })

  it('gives no next on the last page, nor beyond it (where prev is the last page)', async () => {
    assert.deepEqual(links(await list('?page=3&limit=3')), {
      first: '/v1/folders?page=1&limit=3',
      prev: '/v1/folders?page=2&limit=3',
      last: '/v1/folders?page=3&limit=3',
    })
    const beyond = await list('?page=9&limit=3')
    assert.equal(beyond.statusCode, 200)
    assert.deepEqual(beyond.json<{ folders: unknown[] }>().folders, [])
    assert.deepEqual(links(beyond), {
      first: '/v1/folders?page=1&limit=3',
      prev: '/v1/folders?page=3&limit=3',
      last: '/v1/folders?page=3&limit=3',
    })
  })

  it('uses the default and the clamped limit, and last = 1 when everything fits or nothing matches', async () => {
    assert.deepEqual(links(await list('')), {
      first: '/v1/folders?page=1&limit=50',
      last: '/v1/folders?page=1&limit=50',
    })
    assert.deepEqual(links(await list('?limit=500')), {
      first: '/v1/folders?page=1&limit=100',
      last: '/v1/folders?page=1&limit=100',
    })
    const empty = await list('', CAROL_SESSION)
    assert.equal(empty.json<{ total: number }>().total, 0)
    assert.deepEqual(links(empty), {
      first: '/v1/folders?page=1&limit=50',
      last: '/v1/folders?page=1&limit=50',
    })
  })

  it('keeps folder_id (in lower case) in every link', async () => {
    const res = await list(`?folder_id=${PROJECTS.toUpperCase()}&limit=2&page=1`)
    assert.equal(res.json<{ total: number }>().total, PROJECT_CHILDREN)
    assert.deepEqual(links(res), {
      first: `/v1/folders?folder_id=${PROJECTS}&page=1&limit=2`,
      next: `/v1/folders?folder_id=${PROJECTS}&page=2&limit=2`,
      last: `/v1/folders?folder_id=${PROJECTS}&page=2&limit=2`,
    })
  })

  it('leads a client through every page: following next visits each folder once', async () => {
    const seen: string[] = []
    let next: string | undefined = '/v1/folders?limit=2'
    let pages = 0
    while (next !== undefined) {
      const res: LightMyRequestResponse = await ctx.app.inject({
        url: next,
        headers: sessionCookieHeaders(ALICE_SESSION),
      })
      assert.equal(res.statusCode, 200)
      seen.push(...res.json<{ folders: { id: string }[] }>().folders.map((f) => f.id))
      next = links(res, true).next
      if (next !== undefined) assert.match(next, CURSOR)
      pages++
    }
    assert.equal(pages, Math.ceil(ROOT_FOLDERS / 2))
    assert.equal(seen.length, ROOT_FOLDERS)
    assert.equal(new Set(seen).size, ROOT_FOLDERS)
  })

  it('is sent on HEAD and 304 too, but not on errors', async () => {
    const head = await ctx.app.inject({
      method: 'HEAD',
      url: '/v1/folders?limit=3',
      headers: sessionCookieHeaders(ALICE_SESSION),
    })
    assert.equal(head.statusCode, 200)
    assert.equal(links(head).next, '/v1/folders?page=2&limit=3')
    const first = await list('?limit=3')
    const notModified = await ctx.app.inject({
      url: '/v1/folders?limit=3',
      headers: { ...sessionCookieHeaders(ALICE_SESSION), 'if-none-match': String(first.headers.etag) },
    })
    assert.equal(notModified.statusCode, 304)
    assert.equal(notModified.headers.link, first.headers.link)
    for (const res of [
      await ctx.app.inject('/v1/folders'),
      await list('?page=0'),
      await list(`?folder_id=${CAROL_SESSION}`),
    ]) {
      assert.ok(res.statusCode >= 400)
      assert.equal(res.headers.link, undefined, `no Link on ${res.statusCode}`)
    }
  })

  it('paginationLinks: the arithmetic at the edges', () => {
    const plain = (parentId: string | null, page: number, limit: number, total: number) =>
      paginationLinks('/p', { parentId, page, limit, total })
    assert.equal(plain(null, 1, 10, 0), '</p?page=1&limit=10>; rel="first", </p?page=1&limit=10>; rel="last"')
    assert.equal(
      plain(null, 2, 10, 10),
      '</p?page=1&limit=10>; rel="first", </p?page=1&limit=10>; rel="prev", </p?page=1&limit=10>; rel="last"',
    )
    assert.equal(
      plain('abc', 1, 10, 11),
      '</p?folder_id=abc&page=1&limit=10>; rel="first", </p?folder_id=abc&page=2&limit=10>; rel="next", ' +
        '</p?folder_id=abc&page=2&limit=10>; rel="last"',
    )
    assert.match(plain(null, 2147483647, 100, 1), /page=1&limit=100>; rel="prev"/)
    assert.equal(
      paginationLinks('/p', { parentId: 'abc', page: 1, limit: 10, total: 0, changes: 'C' }),
      '</p?folder_id=abc&page=1&limit=10>; rel="first", </p?folder_id=abc&page=1&limit=10>; rel="last", ' +
        '</p/changes?folder_id=abc&cursor=C>; rel="changes"',
    )
    assert.equal(
      paginationLinks('/p', {
        parentId: null,
        page: 1,
        limit: 10,
        total: 30,
        cursors: { next: 'N', prev: 'P' },
      }),
      '</p?page=1&limit=10>; rel="first", </p?page=1&limit=10&cursor=P>; rel="prev", ' +
        '</p?page=2&limit=10&cursor=N>; rel="next", </p?page=3&limit=10>; rel="last"',
    )
  })

  it('never links to a page beyond 2147483647, the largest the query accepts', () => {
    const top = 2147483647
    const pages = (header: string) => [...header.matchAll(/page=(\d+)/g)].map((m) => Number(m[1]))
    const cursor = paginationLinks('/p', {
      parentId: null,
      page: top,
      limit: 1,
      total: 3,
      cursors: { next: 'N', prev: 'P' },
    })
    assert.ok(cursor.includes(`page=${top}&limit=1&cursor=N>; rel="next"`), cursor)
    const offset = paginationLinks('/p', { parentId: null, page: top - 1, limit: 1, total: 2 ** 40 })
    assert.deepEqual(pages(offset), [1, top - 2, top, top], offset)
    assert.ok(
      pages(paginationLinks('/p', { parentId: null, page: top, limit: 1, total: 2 ** 40 })).every(
        (p) => p <= top,
      ),
    )
  })
})
