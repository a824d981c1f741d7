import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { changesBinding, ChangesCursors } from '../../src/tokens/changes-cursor.js'
import { changesBody } from '../../src/feed/changes-feed.js'
import { CursorSealer, cursorBinding } from '../../src/tokens/listing-cursor.js'
import { ALICE as USER } from '../helpers/fixtures/users.js'
import { ALL_ROWS, type ChangeRow, type ChangesResult, type FolderRow } from '../../src/store/store.js'

/** The feed module without HTTP or database: entries, collapse, next cursor, tokens. */

const key = randomBytes(32)
const cursors = new ChangesCursors(key)
const PARENT = 'f0000000-0000-4000-8000-000000000050'
const binding = changesBinding(USER, PARENT)
const owner = { id: USER, username: 'alice', avatar_url: null }

const folderRow = (n: number, name: string): FolderRow => ({
  id: `f0000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`,
  name,
  folder_id: PARENT,
  created_at: Date.UTC(2026, 0, 1),
  updated_at: Date.UTC(2026, 0, 2),
})

type Read = Extract<ChangesResult, { outcome: 'changes' }>
const read = (rows: ChangeRow[], more: boolean): Read => ({
  outcome: 'changes',
  rows,
  more,
  owner,
  present: { generation: 900, row: ALL_ROWS },
})
const upsert = (generation: number, row: number, folder: FolderRow): ChangeRow => ({
  kind: 'folder',
  position: { generation, row },
  id: folder.id,
  folder,
})
const remove = (generation: number, row: number, id: string): ChangeRow => ({
  kind: 'folder',
  position: { generation, row },
  id,
  folder: null,
})

describe('changes body', () => {
  const a = folderRow(1, 'a')
  const b = folderRow(2, 'b')

  it('gives each folder once, at its last occurrence, with the listing fields', () => {
    const body = changesBody(
      read(
        [
          upsert(10, 1, a),
          upsert(11, 2, b),
          { kind: 'owner', position: { generation: 12, row: 3 } },
          remove(13, 4, a.id),
        ],
        false,
      ),
      cursors,
      binding,
    )
    assert.deepEqual(body.changes, [
      {
        type: 'upsert',
        folder: {
          id: b.id,
          name: 'b',
          folder_id: PARENT,
          owner,
          created_at: '2026-01-01T00:00:00.000Z',
          updated_at: '2026-01-02T00:00:00.000Z',
        },
      },
      { type: 'owner', owner },
      { type: 'remove', id: a.id },
    ])
    assert.equal(body.has_more, false)
  })

  it('ends at the last row returned when more follow, at the present otherwise', () => {
    const short = changesBody(read([upsert(10, 1, a), upsert(10, 2, b)], true), cursors, binding)
    assert.equal(short.has_more, true)
    assert.deepEqual(cursors.open(short.cursor, binding), { generation: 10, row: 2 })
    const done = changesBody(read([upsert(10, 1, a)], false), cursors, binding)
    assert.deepEqual(cursors.open(done.cursor, binding), { generation: 900, row: ALL_ROWS })
    const none = changesBody(read([], false), cursors, binding)
    assert.deepEqual(none.changes, [])
    assert.deepEqual(cursors.open(none.cursor, binding), { generation: 900, row: ALL_ROWS })
  })

  it("gives the request's own cursor back when the answer ends where it began", () => {
    const present = { generation: 900, row: ALL_ROWS }
    const token = cursors.seal(present, binding)
    assert.equal(changesBody(read([], false), cursors, binding, { token, at: present }).cursor, token)
    // anywhere else, a cursor sealed for the answer's end
    const earlier = { generation: 10, row: 2 }
    const behind = changesBody(read([upsert(10, 3, a)], false), cursors, binding, { token, at: earlier })
    assert.notEqual(behind.cursor, token)
    assert.deepEqual(cursors.open(behind.cursor, binding), present)
  })
})

describe('changes cursors', () => {
  const position = { generation: 1_790_000_000_000_000, row: 12345 }

  it('round-trip a position in an opaque, URL-safe token of at most 256 characters', () => {
    const token = cursors.seal(position, binding)
    assert.match(token, /^[A-Za-z0-9_-]{1,256}$/)
    assert.ok(!token.includes(String(position.generation)))
    assert.deepEqual(cursors.open(token, binding), position)
    assert.deepEqual(cursors.open(cursors.seal({ generation: 1, row: ALL_ROWS }, binding), binding), {
      generation: 1,
      row: ALL_ROWS,
    })
  })

  it('open for no other user, folder, key or token kind', () => {
    const token = cursors.seal(position, binding)
    assert.equal(cursors.open(token, changesBinding(USER, null)), null)
    assert.equal(cursors.open(token, changesBinding(PARENT, PARENT)), null)
    assert.equal(new ChangesCursors(randomBytes(32)).open(token, binding), null)
    const flipped = Buffer.from(token, 'base64url')
    flipped[20] = (flipped[20] as number) ^ 1
    assert.equal(cursors.open(flipped.toString('base64url'), binding), null)
    // A listing continuation token of the same user and folder is not a changes cursor.
    const listing = new CursorSealer(key)
    const listingToken = listing.seal(
      'after',
      { name: 'x', created_at: 1, id: folderRow(1, 'x').id },
      cursorBinding(USER, PARENT),
    )
    assert.equal(cursors.open(listingToken, binding), null)
    assert.equal(listing.open(token, cursorBinding(USER, PARENT)), null)
    assert.equal(cursors.open('', binding), null)
    assert.equal(cursors.open('a'.repeat(257), binding), null)
  })
})
