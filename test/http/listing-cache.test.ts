import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { ListingCache } from '../../src/http/listing-cache.js'
import { validateImport } from '../../src/import/validate-import.js'
import { openStore } from '../../src/store/open-store.js'
import type { Store } from '../../src/store/store.js'
import { sqliteBackend, TEST_SETTINGS } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { appOver, listBody, request } from '../helpers/apps/test-app.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { ALICE as OWNER, ALICE_SESSION as SESSION } from '../helpers/fixtures/users.js'

/**
 * Finished listings are reused while the owner's listing generation is unchanged. Whatever
 * writes through a Store, this connection or another one (the CLI, another worker), the next
 * request must see it: these tests write between two identical requests and check the second
 * answer. (test/contract/listing-generations.test.ts does the same with plain SQL writes on
 * both backends.)
 */

const PARENT = uuid('ca000000', 3)
const now = Date.now()

describe('listing cache over SQLite', () => {
  let opened: Awaited<ReturnType<typeof sqliteBackend.open>>
  let app: FastifyInstance
  /** A second connection to the same file, as the CLI or another process would have. */
  let other: Store

  const list = () => request(app, { session: SESSION, query: `folder_id=${PARENT}&limit=100` })
  const names = async () => listBody(await list()).folders.map((f) => f.name)

  before(async () => {
    opened = await sqliteBackend.open()
    await seedOwner(opened.store, {
      owner: OWNER,
      username: 'alice',
      sessions: [SESSION],
      folders: [
        { id: PARENT, name: 'Parent' },
        ...['a', 'b', 'c'].map((name, i) => ({ id: uuid('ca100000', i), name, folder_id: PARENT })),
      ],
      at: now,
    })
    app = await appOver(opened.store)
    other = await openStore({ ...TEST_SETTINGS, databaseUrl: opened.url })
  })
  after(async () => {
    await app.close()
    await other.close()
    await opened.cleanup()
  })

  it('answers a repeated request with the same bytes and ETag', async () => {
    const first = await list()
    const second = await list()
    assert.equal(first.statusCode, 200)
    assert.equal(second.body, first.body)
    assert.equal(second.headers.etag, first.headers.etag)
    assert.equal(second.headers.link, first.headers.link)
  })

  it('sees a folder deleted through another connection on the next request', async () => {
    assert.deepEqual(await names(), ['a', 'b', 'c'])
    assert.equal(await other.markFolderDeleted(uuid('ca100000', 1), now + 1), true)
    const after = await list()
    assert.deepEqual(
      listBody(after).folders.map((f) => f.name),
      ['a', 'c'],
    )
    assert.equal(listBody(after).total, 2)
  })

  it('sees a folder imported through another connection, and one written through its own', async () => {
    assert.deepEqual(await names(), ['a', 'c'])
    await other.importData(
      validateImport({ folders: [{ name: 'd', folder_id: PARENT, owner_id: OWNER }] }, now),
    )
    assert.deepEqual(await names(), ['a', 'c', 'd'])
    await opened.store.importData(
      validateImport({ folders: [{ name: 'e', folder_id: PARENT, owner_id: OWNER }] }, now),
    )
    assert.deepEqual(await names(), ['a', 'c', 'd', 'e'])
  })

  it('never caches authorisation: a freeze or a revocation elsewhere applies at once', async () => {
    assert.equal((await list()).statusCode, 200)
    await other.setUserFrozen(OWNER, true, now + 2)
    assert.equal((await list()).statusCode, 403)
    await other.setUserFrozen(OWNER, false, now + 3)
    assert.equal((await list()).statusCode, 200)
    await other.deleteSession(SESSION)
    assert.equal((await list()).statusCode, 401)
  })
})

describe('ListingCache', () => {
  const entry = (body: string) => ({ body: Buffer.from(body), etag: '"e"', link: '' })

  it('returns what was set under the same key only', () => {
    const cache = new ListingCache(1_000_000)
    assert.equal(cache.get('k'), undefined)
    cache.set('k', entry('one'))
    assert.equal(cache.get('k')?.body.toString(), 'one')
    assert.equal(cache.get('k2'), undefined)
    cache.set('k', entry('two'))
    assert.equal(cache.get('k')?.body.toString(), 'two')
    assert.equal(cache.size, 1 + 3 + 3, 'a replaced entry no longer counts')
  })

  it('stays within its byte budget, evicting the least recently used entry', () => {
    // Each entry: 1 key + 10 body + 3 etag + 0 link = 14 bytes; the budget holds two.
    const cache = new ListingCache(30)
    cache.set('a', entry('a'.repeat(10)))
    cache.set('b', entry('b'.repeat(10)))
    assert.ok(cache.get('a') !== undefined, 'a is now the most recently used')
    cache.set('c', entry('c'.repeat(10)))
    assert.equal(cache.get('b'), undefined, 'b was the least recently used')
    assert.ok(cache.get('a') !== undefined)
    assert.ok(cache.get('c') !== undefined)
    assert.ok(cache.size <= 30)
    cache.set('d', entry('d'.repeat(100)))
    assert.equal(cache.get('d'), undefined, 'an entry larger than the budget is not kept')
  })

  it('keeps nothing with a zero budget', () => {
    const cache = new ListingCache(0)
    assert.equal(cache.enabled, false)
    cache.set('k', entry('x'))
    assert.equal(cache.get('k'), undefined)
  })
})
