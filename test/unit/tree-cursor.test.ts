import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { describe, it } from 'node:test'
import { TreeCursors, treeBinding } from '../../src/tokens/tree-cursor.js'
import { MAX_TOKEN_LENGTH, sealToken } from '../../src/tokens/sealed-token.js'
import { treePathOf } from '../../src/store/tree-walk.js'

/**
 * Tree cursors (src/tokens/tree-cursor.ts): a download's place is the path of the last folder
 * sent, kept whole when short and as head, last id and digest when deep, so a cursor stays
 * within a token's length at any depth; cursors of the earlier layout follow the log and
 * are expired in the middle of a download.
 */

const key = randomBytes(32)
const cursors = new TreeCursors(key)
const binding = treeBinding(randomUUID(), null)
const position = { generation: 42, row: 1 }
const ids = (n: number) => Array.from({ length: n }, () => randomUUID())

describe('tree cursors', () => {
  it('carry the path of the last folder sent, at any depth, within a token', () => {
    for (const depth of [1, 6, 7, 8, 12, 1_000_000]) {
      const path = ids(Math.min(depth, 20))
      const after = depth <= 20 ? treePathOf(path) : { ...treePathOf(path), depth }
      for (const top of [null, randomUUID()]) {
        const token = cursors.seal({ position, expansion: { top, after } }, binding)
        assert.ok(token.length <= MAX_TOKEN_LENGTH, `${token.length} characters at depth ${depth}`)
        assert.deepEqual(cursors.open(token, binding), { position, expansion: { top, after } })
      }
    }
    const following = cursors.seal({ position, expansion: null }, binding)
    assert.deepEqual(cursors.open(following, binding), { position, expansion: null })
    const fresh = cursors.seal({ position, expansion: { top: null, after: null } }, binding)
    assert.deepEqual(cursors.open(fresh, binding), { position, expansion: { top: null, after: null } })
  })

  it('keep a deep path as its head, its last id and a digest of every id', () => {
    const path = ids(9)
    const kept = treePathOf(path)
    assert.deepEqual(kept.head, path.slice(0, 5))
    assert.equal(kept.tail?.id, path[8])
    const moved = [...path.slice(0, 6), randomUUID(), ...path.slice(7)]
    assert.notDeepEqual(treePathOf(moved).tail?.digest, kept.tail?.digest)
  })

  it('open an earlier cursor that follows the log, and expire one in the middle of a download', () => {
    const earlier = (mode: number) => {
      const plain = Buffer.alloc(54)
      plain[0] = 0xc3
      plain.writeBigInt64BE(42n, 1)
      plain.writeBigInt64BE(1n, 9)
      plain[17] = mode
      return sealToken(key, plain, binding)
    }
    assert.deepEqual(cursors.open(earlier(0), binding), { position, expansion: null })
    assert.equal(cursors.open(earlier(1), binding), 'expired')
    assert.equal(cursors.open(earlier(2), binding), 'expired')
    assert.equal(cursors.open(earlier(1), treeBinding(randomUUID(), null)), null)
  })
})
