import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { printable, quoted } from '../../src/printable.js'

describe('printable: data on a terminal', () => {
  it('escapes C0, DEL and C1 control characters and leaves the rest alone', () => {
    assert.equal(printable('a\u001b[31mb\r\n\u007f\u0085é😀'), 'a\\u001b[31mb\\u000d\\u000a\\u007f\\u0085é😀')
  })
  it('cuts long values by code points, saying how much was left out', () => {
    assert.equal(printable('😀'.repeat(10), 4), '😀😀😀😀…(6 more characters)')
    assert.equal(quoted('x'.repeat(10_000_000)).length, 2 + 80 + '…(9999920 more characters)'.length)
    assert.equal(quoted('short'), "'short'")
  })
})
