import { createHash } from 'node:crypto'
import { uuidFromHex } from '../ids.js'
import type { FolderKey, ListingOrder } from '../store/store.js'
import { MAX_TOKEN_LENGTH, SEAL_OVERHEAD, openToken, sealToken } from './sealed-token.js'

/**
 * Continuation tokens: the `cursor` of the `next` and `prev` links. A token names the
 * boundary of the page it was made on (the sort key of its last or first folder) and the
 * direction to go from there.
 *
 * Sealed with AES-256-GCM under the deployment's cursor key, which a migration generates and
 * keeps in the database, so every instance opens every other's tokens with no
 * configuration, and a token of another database never opens. The user and the parent folder
 * the token was made for are the associated data: not written in the token, but a token
 * opened for any other user or folder fails authentication like a forged one. Nothing in
 * the token is readable (URLs end up in proxy logs).
 *
 * Layout before sealing: one header byte (version, direction, name mode), created_at as an
 * int64 of milliseconds, the id's 16 bytes, then the name. Sealed: 12-byte nonce, ciphertext,
 * 16-byte tag, in base64url. 256 characters hold 192 bytes, so 139 bytes remain for the
 * name: longer names (up to 1,020 bytes of UTF-8) are carried as a 16-byte SHA-256 digest
 * and their first 123 bytes; Listings.resolve (listing/listing.ts) finds such a boundary again.
 */

export type Direction = 'after' | 'before'

/** Where a cursor page starts: strictly after or before `key` in the listing order. */
export interface Seek {
  direction: Direction
  key: FolderKey
}

/** An opened token: the seek, and for a long boundary name, what to resolve it with. */
export interface OpenedCursor extends Seek {
  /** set when the token holds only the name's prefix: its digest, to match the full name */
  nameDigest: Buffer | null
}

const VERSION = 1
const FIXED_BYTES = 1 + 8 + 16
const MAX_PAYLOAD = Math.floor((MAX_TOKEN_LENGTH * 3) / 4) - SEAL_OVERHEAD
const INLINE_NAME_BYTES = MAX_PAYLOAD - FIXED_BYTES
const DIGEST_BYTES = 16
const PREFIX_BYTES = INLINE_NAME_BYTES - DIGEST_BYTES
const BEFORE_FLAG = 0x10
const DIGEST_FLAG = 0x20

export function nameDigest(name: string): Buffer {
  return createHash('sha256').update(name, 'utf8').digest().subarray(0, DIGEST_BYTES)
}

/** The longest prefix of `bytes` of at most `max` bytes that ends on a character boundary. */
function utf8Prefix(bytes: Buffer, max: number): Buffer {
  let end = Math.min(max, bytes.length)
  // Continuation bytes are 10xxxxxx: back up to the start of the character cut in two.
  while (end > 0 && end < bytes.length && ((bytes[end] as number) & 0xc0) === 0x80) end--
  return bytes.subarray(0, end)
}

export class CursorSealer {
  private readonly key: Buffer

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new Error('the cursor key must be 32 bytes')
    this.key = Buffer.from(key)
  }

  /** A token for the page beyond `key` in `direction`, valid only for `binding`. */
  seal(direction: Direction, key: FolderKey, binding: string): string {
    const name = Buffer.from(key.name, 'utf8')
    const long = name.length > INLINE_NAME_BYTES
    const header = Buffer.alloc(FIXED_BYTES)
    header[0] = VERSION | (direction === 'before' ? BEFORE_FLAG : 0) | (long ? DIGEST_FLAG : 0)
    header.writeBigInt64BE(BigInt(key.created_at), 1)
    Buffer.from(key.id.replaceAll('-', ''), 'hex').copy(header, 9)
    const tail = long ? [nameDigest(key.name), utf8Prefix(name, PREFIX_BYTES)] : [name]
    return sealToken(this.key, Buffer.concat([header, ...tail]), binding)
  }

  /** The token's content, or null for anything this key did not seal for `binding`. */
  open(token: string, binding: string): OpenedCursor | null {
    const plain = openToken(this.key, token, binding, FIXED_BYTES + 1)
    if (plain === null) return null
    const flags = plain[0] as number
    if ((flags & 0x0f) !== VERSION) return null
    const hex = plain.subarray(9, FIXED_BYTES).toString('hex')
    const long = (flags & DIGEST_FLAG) !== 0
    const nameStart = FIXED_BYTES + (long ? DIGEST_BYTES : 0)
    return {
      direction: (flags & BEFORE_FLAG) !== 0 ? 'before' : 'after',
      key: {
        name: plain.subarray(nameStart).toString('utf8'),
        created_at: Number(plain.readBigInt64BE(1)),
        id: uuidFromHex(hex),
      },
      nameDigest: long ? plain.subarray(FIXED_BYTES, nameStart) : null,
    }
  }
}

/**
 * What a token is bound to: one user's listing of one parent (null: the root), in one order.
 * The name order's binding is the one tokens had before orders existed, so they stay valid;
 * a token of one order opens under the other like a forged one.
 */
export function cursorBinding(userId: string, parentId: string | null, order: ListingOrder = 'name'): string {
  const binding = `folder-service cursor\u0000${userId}\u0000${parentId ?? ''}`
  return order === 'name' ? binding : `${binding}\u0000${order}`
}
