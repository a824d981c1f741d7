import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ListingCache } from '../../src/http/listing-cache.js'

/**
 * When the PostgreSQL primary moves, the listing cache drops everything the old primary
 * vouched for (the new one may hold other data under the same generation after a lost
 * commit), including an answer read before the change and filed after it.
 */

const entry = (text: string) => ({ body: Buffer.from(text), etag: `"${text}"`, link: '' })

describe('ListingCache.clear', () => {
  it('empties the cache and its byte count', () => {
    const cache = new ListingCache(1024)
    cache.set('a', entry('one'))
    cache.set('b', entry('two'))
    assert.ok(cache.size > 0)
    cache.clear()
    assert.equal(cache.size, 0)
    assert.equal(cache.get('a'), undefined)
    assert.equal(cache.get('b'), undefined)
  })

  it('refuses an answer read before a clear (its era) and files one read after it', () => {
    const cache = new ListingCache(1024)
    const before = cache.era
    cache.clear()
    cache.set('a', entry('old primary'), before)
    assert.equal(cache.get('a'), undefined)
    cache.set('a', entry('new primary'), cache.era)
    assert.equal(cache.get('a')?.etag, '"new primary"')
  })
})
