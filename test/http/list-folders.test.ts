import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { listingBackends } from '../helpers/databases/backends.js'
import {
  BIG_LIVE_CHILDREN,
  allFolders,
  expectedChildren,
  files,
  folders,
  seededApp,
  sessions,
  toBody,
  users,
} from '../helpers/fixtures/contract-data.js'
import { listBody, request, type FolderListJson, type TestApp } from '../helpers/apps/test-app.js'
import { JSON_TYPE, LOWER_UUID, TIMESTAMP, assertProblem, header } from '../helpers/http/http-asserts.js'

/**
 * GET /v1/folders success responses: content, order, pagination, isolation and the exact
 * shape of the body (docs/api.md "Order", "200 body" and "Headers of a 200").
 */

const SECRET_WORDS = [
  'email',
  'password',
  'hash',
  'is_suspended',
  'is_deleted',
  'suspend',
  'deleted',
  'owner_id',
]

for (const backend of listingBackends()) {
  describe(`${backend.name}: GET /v1/folders listing`, { skip: backend.skip }, () => {
    let t: TestApp
    before(async () => {
      t = await seededApp(backend)
    })
    after(async () => {
      await t?.close()
    })

    const get = (query?: string, session = sessions.aliceLive.id) => request(t.app, { session, query })
    async function ok(query?: string, session?: string): Promise<{ body: FolderListJson; payload: string }> {
      const res = await get(query, session)
      assert.equal(res.statusCode, 200, res.payload)
      assert.equal(header(res, 'content-type'), JSON_TYPE)
      return { body: listBody(res), payload: res.payload }
    }

    describe('content and order', () => {
      it('lists the root: exact folders, in code point order, with exact fields', async () => {
        const { body } = await ok()
        const expected = expectedChildren(users.alice.id, null)
        assert.deepEqual(body, { folders: expected.map(toBody), total: expected.length, page: 1, limit: 50 })
      })

      it('orders "Gamma" before "alpha", U+FF21 before U+1F600, and ties by created_at then id', async () => {
        const names = (await ok()).body.folders.map((f) => f.name)
        const at = (n: string) => names.indexOf(n)
        assert.ok(at('Gamma') >= 0 && at('Gamma') < at('alpha'))
        assert.ok(at('Zeta') < at('a') && at('a') < at('alpha') && at('alpha') < at('zeta'))
        assert.ok(at('\uFF21 fullwidth') < at('😀 smile'))
        assert.ok(at('E\u0301mile') < at('Gamma') && at('zeta') < at('Émile'))
        const docs = (await ok()).body.folders.filter((f) => f.name === 'Docs').map((f) => f.id)
        assert.deepEqual(docs, [folders.docsOldLowId.id, folders.docsOldHighId.id, folders.docsNewest.id])
      })

      it('lists the direct children of a folder only', async () => {
        const { body } = await ok(`folder_id=${folders.nested.id}`)
        assert.deepEqual(body, {
          folders: [toBody(folders.level1), toBody(folders.volatile)],
          total: 2,
          page: 1,
          limit: 50,
        })
        const deeper = await ok(`folder_id=${folders.level1.id}`)
        assert.deepEqual(deeper.body.folders, [toBody(folders.level2)])
        const leaf = await ok(`folder_id=${folders.level2.id}`)
        assert.deepEqual(leaf.body, { folders: [], total: 0, page: 1, limit: 50 })
      })

      it('gives an empty root to a user without folders', async () => {
        assert.deepEqual((await ok(undefined, sessions.emptyLive.id)).body, {
          folders: [],
          total: 0,
          page: 1,
          limit: 50,
        })
      })

      it('reports avatar_url null as null', async () => {
        const { body } = await ok(undefined, sessions.daveLive.id)
        assert.deepEqual(body.folders, [toBody(folders.daveFolder)])
        assert.equal(body.folders[0]?.owner.avatar_url, null)
      })
    })

    describe('isolation', () => {
      it('never shows another user’s folders, even with the same names', async () => {
        const aliceIds = new Set<string>()
        for (const parent of [null, folders.big.id, folders.nested.id]) {
          for (let page = 1; page <= 3; page++) {
            const q = `${parent === null ? '' : `folder_id=${parent}&`}limit=100&page=${page}`
            for (const f of (await ok(q)).body.folders) {
              assert.equal(f.owner.id, users.alice.id)
              aliceIds.add(f.id)
            }
          }
        }
        for (const f of allFolders.filter((x) => x.owner_id !== users.alice.id)) {
          assert.ok(!aliceIds.has(f.id), `${f.name} of another user`)
        }
        const bob = await ok(undefined, sessions.bobLive.id)
        assert.deepEqual(bob.body.folders, [toBody(folders.bobPrivate), toBody(folders.bobAlpha)])
        assert.deepEqual((await ok(`folder_id=${folders.bobPrivate.id}`, sessions.bobLive.id)).body.folders, [
          toBody(folders.bobChild),
        ])
      })

      it('never shows deleted folders', async () => {
        const payloads = [
          (await ok('limit=100')).payload,
          (await ok(`folder_id=${folders.nested.id}`)).payload,
          ...(await Promise.all(
            [1, 2, 3].map(async (p) => (await ok(`folder_id=${folders.big.id}&limit=100&page=${p}`)).payload),
          )),
          (await ok(undefined, sessions.bobLive.id)).payload,
        ]
        for (const f of allFolders.filter((x) => x.is_deleted)) {
          for (const payload of payloads) assert.ok(!payload.includes(f.id), `deleted ${f.name}`)
        }
        assert.ok(!payloads[0]?.includes('Deleted root'))
      })

      it('never shows files, and counts only folders', async () => {
        const root = await ok('limit=100')
        const big = await ok(`folder_id=${folders.big.id}&limit=100`)
        const nested = await ok(`folder_id=${folders.nested.id}`)
        for (const file of files) {
          for (const { payload } of [root, big, nested]) assert.ok(!payload.includes(file.id), file.name)
        }
        assert.equal(
          root.body.folders.filter((f) => f.name === 'alpha').length,
          1,
          'the folder alpha, not the file',
        )
        assert.ok(!root.payload.includes('Zeta.txt'))
        assert.equal(root.body.total, expectedChildren(users.alice.id, null).length)
        assert.equal(big.body.total, BIG_LIVE_CHILDREN)
        assert.equal(nested.body.total, 2)
      })

      it('answers one 404 for a missing, a foreign and a deleted parent, and for a file id', async () => {
        const responses = await Promise.all(
          [
            `${folders.bobPrivate.id}`,
            folders.deletedRoot.id,
            'ffffffff-ffff-4fff-bfff-ffffffffffff',
            files[0]?.id ?? '',
          ].map((id) => get(`folder_id=${id}`)),
        )
        const bodies = responses.map((res) => {
          const body = assertProblem(res, 404, 'NOT_FOUND')
          const { request_id, ...rest } = body
          assert.equal(typeof request_id, 'string')
          return rest
        })
        for (const body of bodies.slice(1)) assert.deepEqual(body, bodies[0])
        const headerSets = responses.map((res) =>
          Object.fromEntries(
            Object.entries(res.headers).filter(([name]) => name !== 'x-request-id' && name !== 'date'),
          ),
        )
        for (const h of headerSets.slice(1)) assert.deepEqual(h, headerSets[0])
        // the foreign folder's owner sees it
        assert.equal((await get(`folder_id=${folders.bobPrivate.id}`, sessions.bobLive.id)).statusCode, 200)
        // a live child of a deleted folder is still stored, but the deleted parent hides it
        assert.equal((await get(`folder_id=${folders.deletedRoot.id}`)).statusCode, 404)
      })
    })

    describe('pagination', () => {
      const expected = () => expectedChildren(users.alice.id, folders.big.id).map((f) => f.id)

      for (const limit of [1, 7, 50, 100]) {
        it(`walks every page with limit ${limit}: each folder once, in the total order`, async () => {
          const seen: string[] = []
          const pages = Math.ceil(BIG_LIVE_CHILDREN / limit)
          for (let page = 1; page <= pages + 1; page++) {
            const { body } = await ok(`folder_id=${folders.big.id}&limit=${limit}&page=${page}`)
            assert.equal(body.total, BIG_LIVE_CHILDREN, `total on page ${page}`)
            assert.equal(body.page, page)
            assert.equal(body.limit, limit)
            const want = page <= pages ? Math.min(limit, BIG_LIVE_CHILDREN - (page - 1) * limit) : 0
            assert.equal(body.folders.length, want, `size of page ${page}`)
            seen.push(...body.folders.map((f) => f.id))
          }
          assert.deepEqual(seen, expected())
          assert.equal(new Set(seen).size, BIG_LIVE_CHILDREN)
        })
      }

      it('answers a page beyond the last with folders [] and the true total', async () => {
        const { body } = await ok(`folder_id=${folders.big.id}&limit=100&page=4`)
        assert.deepEqual(body, { folders: [], total: BIG_LIVE_CHILDREN, page: 4, limit: 100 })
        const root = await ok('page=2')
        assert.deepEqual(root.body, {
          folders: [],
          total: expectedChildren(users.alice.id, null).length,
          page: 2,
          limit: 50,
        })
      })
    })

    describe('response exactness', () => {
      it('has exactly the contract’s keys at every level', async () => {
        for (const q of [
          undefined,
          `folder_id=${folders.big.id}&limit=100`,
          `folder_id=${folders.nested.id}`,
        ]) {
          const { body } = await ok(q)
          assert.deepEqual(Object.keys(body).sort(), ['folders', 'limit', 'page', 'total'])
          assert.ok(body.folders.length > 0)
          for (const f of body.folders) {
            assert.deepEqual(Object.keys(f).sort(), [
              'created_at',
              'folder_id',
              'id',
              'name',
              'owner',
              'updated_at',
            ])
            assert.deepEqual(Object.keys(f.owner).sort(), ['avatar_url', 'id', 'username'])
            assert.match(f.created_at, TIMESTAMP)
            assert.match(f.updated_at, TIMESTAMP)
            assert.match(f.id, LOWER_UUID)
            assert.match(f.owner.id, LOWER_UUID)
            if (f.folder_id !== null) assert.match(f.folder_id, LOWER_UUID)
            assert.ok(
              Number.isInteger(body.total) && Number.isInteger(body.page) && Number.isInteger(body.limit),
            )
          }
        }
      })

      it('returns timestamps to the millisecond, as stored', async () => {
        const { body } = await ok(`folder_id=${folders.nested.id}`)
        assert.equal(body.folders[0]?.created_at, new Date(folders.level1.created_at).toISOString())
        assert.equal(body.folders[0]?.created_at, '2026-01-13T00:00:00.001Z')
        assert.equal(body.folders[0]?.updated_at, '2026-01-13T00:00:01.002Z')
      })

      it('returns ids in lower case even when asked in upper case', async () => {
        const { body, payload } = await ok(`folder_id=${folders.nested.id.toUpperCase()}`)
        assert.equal(body.folders[0]?.folder_id, folders.nested.id)
        const uuids = payload.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi) ?? []
        assert.ok(uuids.length >= 6)
        for (const id of uuids) assert.equal(id, id.toLowerCase())
      })

      it('never carries e-mail, password hash, suspension or deletion data', async () => {
        const payloads = [
          (await ok('limit=100')).payload,
          (await ok(`folder_id=${folders.big.id}&limit=100`)).payload,
          (await ok(undefined, sessions.bobLive.id)).payload,
          (await ok(undefined, sessions.daveLive.id)).payload,
        ]
        for (const payload of payloads) {
          for (const u of Object.values(users)) {
            if (u.email !== null) assert.ok(!payload.includes(u.email), 'no e-mail')
            if (u.password_hash !== null) assert.ok(!payload.includes(u.password_hash), 'no password hash')
            assert.ok(!payload.includes('SecretHashValue'))
            assert.ok(!payload.includes('private-mail'))
          }
          const keys = new Set<string>()
          JSON.parse(payload, (key: string, value: unknown) => {
            keys.add(key)
            return value
          })
          for (const word of SECRET_WORDS) {
            for (const key of keys) assert.ok(!key.toLowerCase().includes(word), `key ${key}`)
          }
        }
      })

      it('does not return has_next or data (the shared envelope is not this operation’s shape)', async () => {
        const { body } = await ok(`folder_id=${folders.big.id}&limit=10`)
        assert.equal('has_next' in body, false)
        assert.equal('data' in body, false)
      })
    })
  })
}
