import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RecencyMap } from '../../src/recency-map.js'

/** The bounded map in recency order (src/recency-map.ts). */
describe('recency map', () => {
  it('keeps at most its capacity, the least recently set or touched out first; peek does not refresh', () => {
    const map = new RecencyMap<string, number>(2)
    map.set('a', 1)
    map.set('b', 2)
    assert.equal(map.touch('a'), 1) // a is now the most recent
    map.set('c', 3) // b goes
    assert.deepEqual(
      ['a', 'b', 'c'].map((key) => map.peek(key)),
      [1, undefined, 3],
    )
    assert.equal(map.peek('a'), 1) // not refreshed: a is still the least recent
    map.set('d', 4) // a goes
    assert.deepEqual(
      ['a', 'c', 'd'].map((key) => map.peek(key)),
      [undefined, 3, 4],
    )
    map.set('c', 30) // setting again refreshes without growing
    map.set('e', 5) // d goes
    assert.deepEqual(
      ['c', 'd', 'e'].map((key) => map.peek(key)),
      [30, undefined, 5],
    )
    assert.equal(map.size, 2)
    map.delete('c')
    assert.equal(map.size, 1)
    map.clear()
    assert.equal(map.size, 0)
  })
})
