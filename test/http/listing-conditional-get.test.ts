import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { listingBackends } from '../helpers/databases/backends.js'
import { NOW, folders, seededApp, sessions, toBody } from '../helpers/fixtures/contract-data.js'
import { listBody, request, type TestApp } from '../helpers/apps/test-app.js'
import { JSON_TYPE, assertProblem, assertUnauthorized, header, tokens } from '../helpers/http/http-asserts.js'

/** Response headers, conditional requests and HEAD (docs/api.md "200 body" and "Headers of a 200"). */

const STRONG_ETAG = /^"[\x21\x23-\x7e]*"$/

for (const backend of listingBackends()) {
  describe(`${backend.name}: GET /v1/folders caching headers`, { skip: backend.skip }, () => {
    let t: TestApp
    before(async () => {
      t = await seededApp(backend)
    })
    after(async () => {
      await t?.close()
    })

    const alice = sessions.aliceLive.id
    const get = (headers: Record<string, string> = {}, query?: string) =>
      request(t.app, { session: alice, headers, query })

    async function currentEtag(query?: string): Promise<string> {
      const res = await get({}, query)
      assert.equal(res.statusCode, 200)
      const etag = header(res, 'etag')
      assert.ok(etag !== undefined, 'ETag present')
      return etag
    }

    it('sends JSON with charset, Cache-Control private no-cache, Vary Cookie and a strong ETag', async () => {
      const res = await get()
      assert.equal(res.statusCode, 200)
      assert.equal(header(res, 'content-type'), JSON_TYPE)
      assert.equal(header(res, 'cache-control'), 'private, no-cache')
      assert.ok(tokens(header(res, 'vary')).includes('cookie'), `Vary: ${header(res, 'vary')}`)
      const etag = header(res, 'etag') ?? ''
      assert.match(etag, STRONG_ETAG)
      assert.ok(!etag.startsWith('W/'))
    })

    it('gives the same ETag to the same body and a different one to a different body', async () => {
      const root = await currentEtag()
      assert.equal(await currentEtag(), root)
      // another session of the same user sees the same bytes
      const never = await request(t.app, { session: sessions.aliceNever.id })
      assert.equal(header(never, 'etag'), root)
      assert.notEqual(await currentEtag(`folder_id=${folders.nested.id}`), root)
      assert.notEqual(await currentEtag('limit=3'), root)
      const bob = await request(t.app, { session: sessions.bobLive.id })
      assert.notEqual(header(bob, 'etag'), root)
    })

    it('answers 304 with no body when If-None-Match matches', async () => {
      const etag = await currentEtag()
      for (const inm of [etag, `"x", ${etag}`, `${etag},"y"`, '*', ` * `, `W/${etag}`, `"x", W/${etag}`]) {
        const res = await get({ 'if-none-match': inm })
        assert.equal(res.statusCode, 304, `If-None-Match: ${inm}`)
        assert.equal(res.payload, '', `empty body for ${inm}`)
        // RFC 9110 section 8.6: a 304 carries no Content-Length, or the 200's (HEAD, below).
        assert.equal(header(res, 'content-length'), undefined, `304 for ${inm}`)
        assert.equal(res.headers['content-type'], undefined, `Content-Type of the 304 for ${inm}`)
        assert.equal(header(res, 'etag'), etag)
        assert.equal(header(res, 'cache-control'), 'private, no-cache')
        assert.ok(tokens(header(res, 'vary')).includes('cookie'))
      }
    })

    it('answers 200 with the body when If-None-Match does not match', async () => {
      const etag = await currentEtag()
      const bare = etag.slice(1, -1)
      for (const inm of ['"nope"', `"${bare}x"`, bare, `"x", "y"`, `W/"nope"`]) {
        const res = await get({ 'if-none-match': inm })
        assert.equal(res.statusCode, 200, `If-None-Match: ${inm}`)
        assert.equal(header(res, 'etag'), etag)
        assert.ok(listBody(res).folders.length > 0)
      }
    })

    it('never turns an error into a 304', async () => {
      assertUnauthorized(await request(t.app, { headers: { 'if-none-match': '*' } }))
      assertProblem(
        await request(t.app, { session: sessions.carolLive.id, headers: { 'if-none-match': '*' } }),
        403,
        'FROZEN_ACCOUNT',
      )
      assertProblem(await get({ 'if-none-match': '*' }, 'page=0'), 400, 'INVALID_INPUT')
      assertProblem(
        await get({ 'if-none-match': '*' }, `folder_id=${folders.bobPrivate.id}`),
        404,
        'NOT_FOUND',
      )
    })

    it('changes the ETag when the listed data changes, so an old tag gets 200', async () => {
      const query = `folder_id=${folders.volatile.id}`
      const before = await currentEtag(query)
      assert.equal((await get({ 'if-none-match': before }, query)).statusCode, 304)
      assert.equal(await t.store.markFolderDeleted(folders.volatileA.id, NOW), true)
      const res = await get({ 'if-none-match': before }, query)
      assert.equal(res.statusCode, 200)
      assert.deepEqual(listBody(res).folders, [toBody(folders.volatileB)])
      assert.notEqual(header(res, 'etag'), before)
    })

    it('HEAD sends the headers of GET and no body', async () => {
      for (const query of [undefined, `folder_id=${folders.big.id}&limit=100`]) {
        const g = await get({}, query)
        const h = await request(t.app, { method: 'HEAD', session: alice, query })
        assert.equal(h.statusCode, 200)
        assert.equal(h.payload, '')
        for (const name of ['content-type', 'cache-control', 'vary', 'etag', 'content-length']) {
          assert.equal(header(h, name), header(g, name), name)
        }
      }
      const etag = await currentEtag()
      const cond = await request(t.app, {
        method: 'HEAD',
        session: alice,
        headers: { 'if-none-match': etag },
      })
      assert.equal(cond.statusCode, 304)
      assert.equal(cond.payload, '')
      assert.equal(header(cond, 'content-length'), header(await get({}), 'content-length'))
      const anon = await request(t.app, { method: 'HEAD' })
      assert.equal(anon.statusCode, 401)
      assert.equal(anon.payload, '')
      assert.equal(
        header(anon, 'www-authenticate'),
        'Cookie realm="folder-service", cookie-name="session_id"',
      )
    })
  })
}
