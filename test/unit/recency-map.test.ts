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

  it('bounds the total weight when entries weigh differently; one over the bound is not kept', () => {
    const map = new RecencyMap<string, string>(10, (key, value) => key.length + value.length)
    map.set('a', '1234') // 5
    map.set('b', '123') // 4: 9 in all
    assert.equal(map.weight, 9)
    map.touch('a') // b is now the least recent
    map.set('c', '12') // 3: 12 > 10, so b goes
    assert.deepEqual(
      ['a', 'b', 'c'].map((key) => map.peek(key)),
      ['1234', undefined, '12'],
    )
    assert.equal(map.weight, 8)
    map.set('a', '1') // set again: its old weight is given back
    assert.equal(map.weight, 5)
    map.set('c', '1234567890') // 11 alone: refused, and c keeps what it held
    assert.equal(map.peek('c'), '12')
    assert.equal(map.weight, 5)
    map.delete('a')
    assert.equal(map.weight, 3)
    map.clear()
    assert.deepEqual([map.size, map.weight], [0, 0])
  })
})
