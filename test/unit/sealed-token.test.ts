import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { openToken, sealToken } from '../../src/tokens/sealed-token.js'

/** Sealed tokens (src/tokens/sealed-token.ts): nonces drawn a pool at a time never repeat. */

const NONCE_BYTES = 12

describe('sealed tokens', () => {
  it('use a fresh nonce for every token, across several nonce pools, and open again', () => {
    const key = randomBytes(32)
    const plain = Buffer.from('the same payload every time')
    const nonces = new Set<string>()
    const count = 2000 // several pools of 256
    for (let i = 0; i < count; i++) {
      const token = sealToken(key, plain, 'user folder')
      nonces.add(Buffer.from(token, 'base64url').subarray(0, NONCE_BYTES).toString('hex'))
      assert.deepEqual(openToken(key, token, 'user folder', 1), plain)
    }
    assert.equal(nonces.size, count)
  })
})
