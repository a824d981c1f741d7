import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { ChangesCursors, changesBinding } from '../../src/tokens/changes-cursor.js'
import { ChangesLinkTokens } from '../../src/tokens/generation-tokens.js'
import { ALL_ROWS } from '../../src/store/store.js'

/** The rel="changes" cursors of listing answers (src/tokens/generation-tokens.ts). */

const ALICE = 'a0000000-0000-4000-8000-000000000001'
const BOB = 'b0000000-0000-4000-8000-000000000002'
const FOLDER = 'f0000000-0000-4000-8000-000000000003'

describe('changes cursors of listing answers', () => {
  const cursors = new ChangesCursors(randomBytes(32))
  const opens = (token: string, userId: string, parentId: string | null) =>
    cursors.open(token, changesBinding(userId, parentId))

  it('are sealed once per folder and generation, each opening to its own point only', () => {
    const links = new ChangesLinkTokens()
    const root7 = links.cursor(cursors, ALICE, null, 7)
    assert.deepEqual(opens(root7, ALICE, null), { generation: 7, row: ALL_ROWS })
    assert.equal(links.cursor(cursors, ALICE, null, 7), root7)
    // another folder, another user: their own cursors, which open for nothing else
    const folder7 = links.cursor(cursors, ALICE, FOLDER, 7)
    const bob7 = links.cursor(cursors, BOB, null, 7)
    assert.notEqual(folder7, root7)
    assert.notEqual(bob7, root7)
    assert.equal(opens(folder7, ALICE, null), null)
    assert.equal(opens(bob7, ALICE, null), null)
    assert.deepEqual(opens(folder7, ALICE, FOLDER), { generation: 7, row: ALL_ROWS })
    // a write moves the generation on: a new cursor, kept from then on
    const root8 = links.cursor(cursors, ALICE, null, 8)
    assert.notEqual(root8, root7)
    assert.deepEqual(opens(root8, ALICE, null), { generation: 8, row: ALL_ROWS })
    assert.equal(links.cursor(cursors, ALICE, null, 8), root8)
    // an answer read at an older generation still carries its own point, not the newer one
    assert.deepEqual(opens(links.cursor(cursors, ALICE, null, 7), ALICE, null), {
      generation: 7,
      row: ALL_ROWS,
    })
    assert.equal(links.cursor(cursors, ALICE, null, 8), root8)
  })

  it('keep at most their bound of folders, the least recently used out first', () => {
    const links = new ChangesLinkTokens(2)
    const alice = links.cursor(cursors, ALICE, null, 1)
    const bob = links.cursor(cursors, BOB, null, 1)
    assert.equal(links.cursor(cursors, ALICE, null, 1), alice) // Alice's root: most recent now
    links.cursor(cursors, ALICE, FOLDER, 1) // a third folder: Bob's root goes
    assert.equal(links.cursor(cursors, ALICE, null, 1), alice)
    const bobAgain = links.cursor(cursors, BOB, null, 1)
    assert.notEqual(bobAgain, bob)
    assert.deepEqual(opens(bobAgain, BOB, null), { generation: 1, row: ALL_ROWS })
  })

  it('are sealed anew under another key', () => {
    const links = new ChangesLinkTokens()
    const other = new ChangesCursors(randomBytes(32))
    const first = links.cursor(cursors, ALICE, null, 3)
    const underOther = links.cursor(other, ALICE, null, 3)
    assert.notEqual(underOther, first)
    assert.deepEqual(other.open(underOther, changesBinding(ALICE, null)), { generation: 3, row: ALL_ROWS })
  })
})
