import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { changesBinding, ChangesCursors } from '../../src/tokens/changes-cursor.js'
import { CursorSealer, cursorBinding } from '../../src/tokens/listing-cursor.js'
import { listingKey, Listings, type ListingQuery } from '../../src/listing/listing.js'
import { ALL_ROWS, type FolderPage, type SessionUser } from '../../src/store/store.js'
import { folders, toBody, toRow, users } from '../helpers/fixtures/contract-data.js'

/**
 * The listing module without HTTP or database: every outcome is a value (never a thrown
 * problem), and a page carries its body and what its links are made from, not bytes.
 */

const key = randomBytes(32)
const { alice } = users
const user: SessionUser = {
  id: alice.id,
  username: alice.username,
  avatar_url: alice.avatar_url,
  is_suspended: false,
  generation: 4242,
}
/** Nested's two live children, in listing order. */
const PARENT = folders.nested.id
const [a, b] = [folders.level1, folders.volatile]
const query = (over: Partial<ListingQuery> = {}): ListingQuery => ({
  parentId: PARENT,
  page: 1,
  limit: 2,
  cursor: null,
  ...over,
})

/** A Store answering `page` (null: no such parent) and counting its page reads. */
function listingsOver(page: FolderPage | null) {
  const reads = { count: 0 }
  const listings = new Listings({
    listFolders: () => {
      reads.count++
      return Promise.resolve(page)
    },
    findFolder: () => Promise.resolve(null),
    cursorKey: () => Promise.resolve(key),
    listingCheckpoints: () => Promise.resolve(null),
  })
  return { listings, reads }
}

describe('listing outcomes', () => {
  it('a cursor it did not seal is an outcome, decided before any page read (400 before 404)', async () => {
    const { listings, reads } = listingsOver(null)
    assert.deepEqual(await listings.read(user, query({ cursor: 'not-a-token' })), {
      outcome: 'cursor-invalid',
    })
    assert.equal(reads.count, 0)
  })

  it('a parent that is not a live folder of the user is an outcome', async () => {
    const { listings } = listingsOver(null)
    assert.deepEqual(await listings.read(user, query()), { outcome: 'parent-not-found' })
  })

  it('a page is the body and its navigation: sealed tokens for the user and parent', async () => {
    const { listings } = listingsOver({ folders: [toRow(a), toRow(b)], total: 5 })
    const read = await listings.read(user, query())
    assert.equal(read.outcome, 'page')
    if (read.outcome !== 'page') return
    const { body, navigation } = read.page
    assert.deepEqual(body.folders, [toBody(a), toBody(b)])
    assert.deepEqual([body.total, body.page, body.limit], [5, 1, 2])
    assert.deepEqual(
      [navigation.parentId, navigation.page, navigation.limit, navigation.total],
      [PARENT, 1, 2, 5],
    )
    assert.equal(navigation.cursors?.prev, null, 'page 1 has no previous page')
    const next = new CursorSealer(key).open(navigation.cursors?.next ?? '', cursorBinding(user.id, PARENT))
    assert.equal(next?.direction, 'after')
    assert.equal(next?.key.id, b.id, 'next continues after the last folder shown')
    const changes = new ChangesCursors(key).open(navigation.changes ?? '', changesBinding(user.id, PARENT))
    assert.deepEqual(changes, { generation: user.generation, row: ALL_ROWS })
  })

  it('the answer key tells apart every field an answer depends on, the generation included', () => {
    const keys = [
      listingKey(user, query()),
      listingKey({ ...user, generation: user.generation + 1 }, query()),
      listingKey({ ...user, id: PARENT }, query()),
      listingKey(user, query({ parentId: null })),
      listingKey(user, query({ page: 2 })),
      listingKey(user, query({ limit: 3 })),
      listingKey(user, query({ cursor: 'c' })),
    ]
    assert.equal(new Set(keys).size, keys.length)
    assert.equal(listingKey(user, query()), listingKey({ ...user }, query()))
  })
})
