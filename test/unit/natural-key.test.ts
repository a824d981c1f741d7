import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { compareCodePoints } from '../../src/ordering/code-points.js'
import {
  MAX_TOKEN_BYTES,
  NATURAL_KEY_VERSION,
  compareKeys,
  naturalKey,
} from '../../src/ordering/natural-key.js'
import { CASE_TABLE, compareNatural, naturalNames } from '../helpers/fixtures/natural-rule.js'

/** The order of stored keys (byte order) with the name tie-break after it, as the databases sort. */
const byKey = (a: string, b: string) => compareKeys(naturalKey(a), naturalKey(b)) || compareCodePoints(a, b)
const sign = (n: number) => Math.sign(n)

describe('naturalKey', () => {
  it('orders every group of the case table as the rule does', () => {
    for (const group of CASE_TABLE) {
      assert.deepEqual([...group].sort(compareNatural), group, 'the table itself follows the rule')
      assert.deepEqual([...group].reverse().sort(byKey), group)
    }
  })

  it('agrees with the rule on random pairs of names', () => {
    fc.assert(
      fc.property(naturalNames(), naturalNames(), (a, b) => {
        assert.equal(
          sign(byKey(a, b)),
          sign(compareNatural(a, b)),
          `${JSON.stringify(a)} vs ${JSON.stringify(b)}`,
        )
      }),
      { numRuns: 5000 },
    )
  })

  it('starts with its version and stays within an index entry for any name', () => {
    const worst = '\uFDFA'.repeat(255)
    assert.equal(naturalKey('a')[0], NATURAL_KEY_VERSION)
    assert.equal(naturalKey(worst).length, MAX_TOKEN_BYTES + 4)
    assert.ok(naturalKey('1 '.repeat(127) + '1').length <= MAX_TOKEN_BYTES + 4)
  })
})
