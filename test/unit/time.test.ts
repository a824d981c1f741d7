import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { formatTimestamp, parseTimestamp } from '../../src/time.js'

const MIN = Date.parse('0001-01-01T00:00:00.000Z')
const MAX = Date.parse('9999-12-31T23:59:59.999Z')

describe('formatTimestamp', () => {
  it('equals Date#toISOString for every instant of years 0001 to 9999', () => {
    fc.assert(
      fc.property(fc.integer({ min: MIN, max: MAX }), (ms) => {
        assert.equal(formatTimestamp(ms), new Date(ms).toISOString())
      }),
      { numRuns: 20_000 },
    )
  })

  it('is right at the edges of days, years and the stored range, in any call order', () => {
    for (const text of [
      '0001-01-01T00:00:00.000Z',
      '1969-12-31T23:59:59.999Z',
      '1970-01-01T00:00:00.000Z',
      '2024-02-29T23:59:59.999Z',
      '2024-03-01T00:00:00.000Z',
      '9999-12-31T23:59:59.999Z',
      '1969-12-31T23:59:59.999Z',
    ]) {
      assert.equal(formatTimestamp(Date.parse(text)), text)
    }
  })

  it('round-trips through parseTimestamp', () => {
    fc.assert(
      fc.property(fc.integer({ min: MIN, max: MAX }), (ms) => {
        assert.equal(parseTimestamp(formatTimestamp(ms)), ms)
      }),
    )
  })
})
