import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { postgresBackend, sqliteBackend } from '../helpers/backends.js'
import { allFolders, seededApp, sessions, UNKNOWN_ID, type TestApp } from '../helpers/fixtures.js'

/**
 * The same data on both backends gives the same bytes (issue: PostgreSQL backend). Both
 * apps load the one fixture data set; every request below goes to both, and status,
 * headers that describe the body, and the body itself (request_id blanked in problems)
 * must be equal. Equal ETags double-check that the bodies are byte for byte the same.
 */

const requests: string[] = []
const listed = (folderId: string | null, query: string) =>
  `/v1/folders?${folderId === null ? '' : `folder_id=${folderId}&`}${query}`

// Every parent that has children (and the root), at several page sizes and pages.
const parents = [null, ...new Set(allFolders.flatMap((f) => (f.folder_id === null ? [] : [f.folder_id])))]
for (const parent of parents) {
  for (const query of ['', 'limit=1', 'limit=7&page=2', 'limit=100&page=3', 'page=999', 'limit=500']) {
    requests.push(listed(parent, query))
  }
}
requests.push(
  listed(parents[1] ?? null, 'limit=50').replace(
    /folder_id=([0-9a-f-]+)/,
    (_, id: string) => `folder_id=${id.toUpperCase()}`,
  ),
)
requests.push(listed(UNKNOWN_ID, ''), '/v1/folders?page=0', '/v1/folders?limit=abc')

const blankRequestId = (res: LightMyRequestResponse) =>
  res.body.replace(/"request_id":"[^"]*"/, '"request_id":""')

describe('sqlite and postgres answer byte for byte alike', { skip: postgresBackend.skip }, () => {
  let sqlite: TestApp
  let postgres: TestApp

  before(async () => {
    sqlite = await seededApp(sqliteBackend)
    postgres = await seededApp(postgresBackend)
  })
  after(async () => {
    await sqlite?.close()
    await postgres?.close()
  })

  // Alice owns most of the data set; Bob and Dave little, but their 404s and roots count too.
  const withoutCursors = ({ headers }: LightMyRequestResponse) =>
    typeof headers.link === 'string'
      ? headers.link.replace(/([?&])cursor=[A-Za-z0-9_-]+>/g, '$1cursor=*>')
      : headers.link

  for (const [session, minimum] of [
    [sessions.aliceLive, 20],
    [sessions.bobLive, 1],
    [sessions.daveLive, 1],
  ] as const) {
    it(`for ${requests.length} requests of session ${session.id}`, async () => {
      let compared = 0
      for (const url of requests) {
        const inject = (t: TestApp) => t.app.inject({ url, headers: { cookie: `session_id=${session.id}` } })
        const [a, b] = [await inject(sqlite), await inject(postgres)]
        assert.equal(b.statusCode, a.statusCode, url)
        assert.equal(b.headers['content-type'], a.headers['content-type'], url)
        // Continuation tokens are sealed with a random nonce under each database's own key:
        // they must sit in the same links, but their bytes differ by design.
        assert.equal(withoutCursors(b), withoutCursors(a), url)
        assert.equal(b.headers.etag, a.headers.etag, url)
        assert.equal(blankRequestId(b), blankRequestId(a), url)
        if (a.statusCode === 200) compared++
      }
      assert.ok(compared >= minimum, `only ${compared} listings compared`)
    })
  }
})
