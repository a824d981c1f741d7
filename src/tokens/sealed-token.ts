import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { recallToken, rememberToken } from './opened-tokens.js'

/**
 * The one sealing of every token the service hands out (listing continuation tokens,
 * changes cursors): AES-256-GCM under the deployment's cursor key, with what the token is
 * bound to (user, folder, token kind) as associated data, so a token opened under any other
 * binding fails authentication like a forged one. Sealed: 12-byte nonce, ciphertext,
 * 16-byte tag, in base64url; nothing of the payload is readable.
 */

export const MAX_TOKEN_LENGTH = 256
const NONCE_BYTES = 12
const TAG_BYTES = 16
/** Bytes a sealed token adds to its payload. */
export const SEAL_OVERHEAD = NONCE_BYTES + TAG_BYTES
const TOKEN_PATTERN = /^[A-Za-z0-9_-]+$/

/**
 * Nonces are drawn from the system's random source a pool at a time (one call for 256
 * tokens instead of one each; an uncached listing page seals three): each slice of a pool
 * is used once and a spent pool is replaced, never refilled, so no nonce repeats.
 */
const NONCE_POOL_BYTES = NONCE_BYTES * 256
let noncePool = Buffer.alloc(0)
let nonceOffset = 0

function freshNonce(): Buffer {
  if (nonceOffset + NONCE_BYTES > noncePool.length) {
    noncePool = randomBytes(NONCE_POOL_BYTES)
    nonceOffset = 0
  }
  const nonce = noncePool.subarray(nonceOffset, nonceOffset + NONCE_BYTES)
  nonceOffset += NONCE_BYTES
  return nonce
}

export function sealToken(key: Buffer, plain: Buffer, binding: string): string {
  const nonce = freshNonce()
  const cipher = createCipheriv('aes-256-gcm', key, nonce)
  cipher.setAAD(Buffer.from(binding, 'utf8'))
  const sealed = Buffer.concat([nonce, cipher.update(plain), cipher.final()])
  const token = Buffer.concat([sealed, cipher.getAuthTag()]).toString('base64url')
  rememberToken(key, token, binding, plain)
  return token
}

/** The payload, or null for anything `key` did not seal for `binding` or shorter than `minPlain`. */
export function openToken(key: Buffer, token: string, binding: string, minPlain: number): Buffer | null {
  if (token.length > MAX_TOKEN_LENGTH || !TOKEN_PATTERN.test(token)) return null
  const recalled = recallToken(key, token, binding)
  if (recalled !== null) return recalled.length >= minPlain ? recalled : null
  const raw = Buffer.from(token, 'base64url')
  // The decoder ignores a last character that adds no whole byte and the unused low bits
  // of the final one: only the spelling sealToken writes is the token (an altered one is 400).
  if (raw.toString('base64url') !== token) return null
  if (raw.length < SEAL_OVERHEAD + minPlain) return null
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES))
  decipher.setAAD(Buffer.from(binding, 'utf8'))
  decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES))
  try {
    const plain = Buffer.concat([
      decipher.update(raw.subarray(NONCE_BYTES, raw.length - TAG_BYTES)),
      decipher.final(),
    ])
    rememberToken(key, token, binding, plain)
    return plain
  } catch {
    return null // altered, truncated, another key or another binding
  }
}
