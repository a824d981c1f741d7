import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { BatchedLookups } from '../../src/store/postgres/batched-lookups.js'

/** How the PostgreSQL adapter groups session lookups (src/store/postgres/batched-lookups.ts). */

/** A lookUp whose statements finish only when the test says so, recording each batch. */
function controlledLookUp() {
  const batches: string[][] = []
  const finish: ((error?: Error) => void)[] = []
  const lookUp = (keys: string[]) => {
    batches.push(keys)
    return new Promise<string[]>((resolve, reject) => {
      finish.push((error) => (error ? reject(error) : resolve(keys.map((key) => key.toUpperCase()))))
    })
  }
  return { batches, finish, lookUp }
}

describe('BatchedLookups', () => {
  it('sends the first lookup at once and groups those that arrive while statements are out', async () => {
    const { batches, finish, lookUp } = controlledLookUp()
    const lookups = new BatchedLookups(lookUp, 2, 100)
    const a = lookups.find('a')
    const b = lookups.find('b')
    const rest = ['c', 'd', 'e'].map((key) => lookups.find(key))
    assert.deepEqual(batches, [['a'], ['b']], 'two statements out, the rest waits')
    finish[0]?.()
    assert.equal(await a, 'A')
    assert.deepEqual(batches, [['a'], ['b'], ['c', 'd', 'e']], 'the waiting ones leave together')
    finish[1]?.()
    finish[2]?.()
    assert.equal(await b, 'B')
    assert.deepEqual(await Promise.all(rest), ['C', 'D', 'E'])
  })

  it('caps a batch and sends the remainder next', async () => {
    const { batches, finish, lookUp } = controlledLookUp()
    const lookups = new BatchedLookups(lookUp, 1, 2)
    const all = ['a', 'b', 'c', 'd', 'e'].map((key) => lookups.find(key))
    finish[0]?.()
    await all[0]
    finish[1]?.()
    await all[2]
    finish[2]?.()
    assert.deepEqual(await Promise.all(all), ['A', 'B', 'C', 'D', 'E'])
    assert.deepEqual(batches, [['a'], ['b', 'c'], ['d', 'e']])
  })

  it('fails every lookup of a failed statement, and only those, and goes on', async () => {
    const { batches, finish, lookUp } = controlledLookUp()
    const lookups = new BatchedLookups(lookUp, 1, 100)
    const first = lookups.find('a')
    const failing = [lookups.find('b'), lookups.find('c')]
    finish[0]?.()
    assert.equal(await first, 'A')
    finish[1]?.(new Error('connection lost'))
    for (const lookup of failing) await assert.rejects(lookup, /connection lost/)
    const after = lookups.find('d')
    finish[2]?.()
    assert.equal(await after, 'D')
    assert.deepEqual(batches, [['a'], ['b', 'c'], ['d']])
  })
})
