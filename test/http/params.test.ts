import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import {
  BIG_LIVE_CHILDREN,
  expectedChildren,
  folders,
  seededApp,
  sessions,
  users,
} from '../helpers/fixtures/contract-data.js'
import { listBody, request, type TestApp } from '../helpers/apps/test-app.js'
import { assertInvalid } from '../helpers/http/http-asserts.js'

/** Query parameters folder_id, page and limit (docs/api.md "Query parameters"). */

const REFUSED_PAGES = [
  '0',
  '-1',
  '1.5',
  'abc',
  '%2B1',
  '+1',
  '',
  '1e2',
  '2147483648',
  '99999999999',
  '00',
  ' 1',
  '1 ',
  '0x10',
  '１',
]
const REFUSED_LIMITS = ['0', '-5', 'abc', '', '2147483648', '99999999999', '1.5', '1e2', '%2B1', '00', '0x10']

for (const backend of allBackends()) {
  describe(`${backend.name}: GET /v1/folders query parameters`, { skip: backend.skip }, () => {
    let t: TestApp
    before(async () => {
      t = await seededApp(backend)
    })
    after(async () => {
      await t?.close()
    })

    const get = (query: string) => request(t.app, { session: sessions.aliceLive.id, query })
    const rootTotal = expectedChildren(users.alice.id, null).length
    const big = folders.big.id

    describe('page', () => {
      for (const value of REFUSED_PAGES) {
        it(`refuses page=${JSON.stringify(value)} with 400 naming page`, async () => {
          assertInvalid(await get(`page=${encodeURIComponent(value)}`), 'page')
        })
      }

      it('refuses a bare `page` without a value, and a raw + (a space in a query)', async () => {
        assertInvalid(await get('page'), 'page')
        assertInvalid(await get('page=+1'), 'page')
        assertInvalid(await get('limit=+1'), 'limit')
      })

      it('defaults to 1', async () => {
        const body = listBody(await get(''))
        assert.equal(body.page, 1)
        assert.equal(body.folders[0]?.id, expectedChildren(users.alice.id, null)[0]?.id)
      })

      it('accepts 1, leading zeros, and 2147483647 (empty page, true total)', async () => {
        const one = await get(`folder_id=${big}&page=1&limit=10`)
        assert.equal(one.statusCode, 200)
        assert.equal(listBody(one).page, 1)
        const padded = await get(`folder_id=${big}&page=002&limit=10`)
        assert.equal(padded.statusCode, 200)
        assert.equal(listBody(padded).page, 2)
        assert.deepEqual(
          listBody(padded).folders.map((f) => f.id),
          expectedChildren(users.alice.id, big)
            .slice(10, 20)
            .map((f) => f.id),
        )
        const max = await get(`folder_id=${big}&page=2147483647`)
        assert.equal(max.statusCode, 200)
        assert.deepEqual(listBody(max), {
          folders: [],
          total: BIG_LIVE_CHILDREN,
          page: 2147483647,
          limit: 50,
        })
        const maxRoot = await get('page=2147483647&limit=100')
        assert.deepEqual(listBody(maxRoot), { folders: [], total: rootTotal, page: 2147483647, limit: 100 })
      })
    })

    describe('limit', () => {
      for (const value of REFUSED_LIMITS) {
        it(`refuses limit=${JSON.stringify(value)} with 400 naming limit`, async () => {
          assertInvalid(await get(`limit=${encodeURIComponent(value)}`), 'limit')
        })
      }

      it('defaults to 50', async () => {
        const body = listBody(await get(`folder_id=${big}`))
        assert.equal(body.limit, 50)
        assert.equal(body.folders.length, 50)
      })

      it('accepts 1 and 100 as given', async () => {
        for (const limit of [1, 7, 100]) {
          const body = listBody(await get(`folder_id=${big}&limit=${limit}`))
          assert.equal(body.limit, limit)
          assert.equal(body.folders.length, limit)
        }
      })

      it('clamps values above 100 to 100, up to 2147483647, and says so in the body', async () => {
        for (const value of ['101', '1000', '2147483647', '0150']) {
          const res = await get(`folder_id=${big}&limit=${value}`)
          assert.equal(res.statusCode, 200, value)
          const body = listBody(res)
          assert.equal(body.limit, 100, value)
          assert.equal(body.folders.length, 100, value)
          assert.equal(body.total, BIG_LIVE_CHILDREN)
        }
        const second = listBody(await get(`folder_id=${big}&limit=101&page=2`))
        assert.deepEqual(
          second.folders.map((f) => f.id),
          expectedChildren(users.alice.id, big)
            .slice(100, 200)
            .map((f) => f.id),
        )
      })
    })

    describe('folder_id', () => {
      it('refuses an empty value', async () => {
        assertInvalid(await get('folder_id='), 'folder_id')
        assertInvalid(await get('folder_id'), 'folder_id')
      })

      it('refuses anything but the 8-4-4-4-12 hex form', async () => {
        for (const value of [
          `urn:uuid:${big}`,
          `{${big}}`,
          big.replaceAll('-', ''),
          `${big} `,
          ` ${big}`,
          `${big.slice(0, -1)}g`,
          `${big}0`,
          big.slice(0, -1),
          'null',
          'root',
          '0',
        ]) {
          assertInvalid(await get(`folder_id=${encodeURIComponent(value)}`), 'folder_id')
        }
      })

      it('accepts any letter case and answers in lower case', async () => {
        const upper = await get(`folder_id=${big.toUpperCase()}&limit=5`)
        assert.equal(upper.statusCode, 200)
        const lower = await get(`folder_id=${big}&limit=5`)
        assert.equal(upper.payload, lower.payload)
        for (const f of listBody(upper).folders) assert.equal(f.folder_id, big)
        const mixed = await get(`folder_id=${big.slice(0, 9).toUpperCase()}${big.slice(9)}&limit=5`)
        assert.equal(mixed.payload, lower.payload)
      })
    })

    describe('repeated and unknown parameters', () => {
      it('refuses a parameter given twice, even with the same value', async () => {
        assertInvalid(await get('page=1&page=2'), 'page')
        assertInvalid(await get('page=1&page=1'), 'page')
        assertInvalid(await get('limit=10&limit=10'), 'limit')
        assertInvalid(await get(`folder_id=${big}&folder_id=${big}`), 'folder_id')
        assertInvalid(await get(`folder_id=${big}&folder_id=${folders.nested.id}`), 'folder_id')
      })

      it('ignores unknown parameters', async () => {
        const plain = await get(`folder_id=${big}&page=2&limit=10`)
        const noisy = await get(
          `sort=desc&folder_id=${big}&x=1&x=2&page=2&has_next=true&limit=10&parent_id=${folders.nested.id}&Page=9`,
        )
        assert.equal(noisy.statusCode, 200)
        assert.equal(noisy.payload, plain.payload)
      })
    })
  })
}
