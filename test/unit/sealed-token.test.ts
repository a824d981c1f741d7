import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { OPENED_TOKENS } from '../../src/tokens/opened-tokens.js'
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

describe('opened tokens (src/tokens/opened-tokens.ts)', () => {
  it('open again from memory under the same key and binding only, as decryption would', () => {
    const key = randomBytes(32)
    const plain = Buffer.from('position 42')
    const token = sealToken(key, plain, 'user folder')
    plain.fill(0) // the sealer's buffer, reused by its caller: what is remembered is a copy
    assert.deepEqual(openToken(key, token, 'user folder', 1), Buffer.from('position 42'))
    // a remembered token opens for no other binding, no other key, and no shorter minimum
    assert.equal(openToken(key, token, 'user other-folder', 1), null)
    assert.equal(openToken(Buffer.from(key), token, 'user other-folder', 1), null)
    assert.equal(openToken(randomBytes(32), token, 'user folder', 1), null)
    assert.equal(openToken(key, token, 'user folder', 12), null)
    // what an opener does to its payload does not reach the next opener
    openToken(key, token, 'user folder', 1)?.fill(0)
    assert.deepEqual(openToken(key, token, 'user folder', 1), Buffer.from('position 42'))
  })

  it('forget the oldest past their bound, which then open by decryption again', () => {
    const key = randomBytes(32)
    const first = sealToken(key, Buffer.from('first'), 'b')
    for (let i = 0; i < OPENED_TOKENS; i++) sealToken(key, Buffer.from(`filler ${i}`), 'b')
    assert.deepEqual(openToken(key, first, 'b', 1), Buffer.from('first'))
    // an altered spelling of a remembered token is not the token
    const altered = `${first.slice(0, -1)}${first.endsWith('A') ? 'B' : 'A'}`
    assert.equal(openToken(key, altered, 'b', 1), null)
  })
})
