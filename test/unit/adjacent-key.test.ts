import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { adjacentKey } from '../../src/listing/adjacent-key.js'

/** The key right beside another in the listing order: id one up or down, wrapping into the next millisecond. */

const key = (id: string, created_at = 1000) => ({ name: 'n', created_at, id })

describe('adjacentKey', () => {
  it('steps the id by one, carrying across the 8-4-4-4-12 groups', () => {
    assert.deepEqual(
      adjacentKey(key('00000000-0000-4000-8000-0000000000ff'), 'after'),
      key('00000000-0000-4000-8000-000000000100'),
    )
    assert.deepEqual(
      adjacentKey(key('00000000-0000-4000-8001-000000000000'), 'before'),
      key('00000000-0000-4000-8000-ffffffffffff'),
    )
  })

  it('wraps into the next or previous millisecond at the ends of the id range', () => {
    assert.deepEqual(
      adjacentKey(key('ffffffff-ffff-ffff-ffff-ffffffffffff'), 'after'),
      key('00000000-0000-0000-0000-000000000000', 1001),
    )
    assert.deepEqual(
      adjacentKey(key('00000000-0000-0000-0000-000000000000'), 'before'),
      key('ffffffff-ffff-ffff-ffff-ffffffffffff', 999),
    )
  })
})
