import type { ChangePosition } from '../store/store.js'
import { openToken, sealToken } from './sealed-token.js'

/**
 * Changes cursors: the `cursor` of GET /v1/folders/changes and of a listing's
 * `rel="changes"` link. A cursor holds one feed position, (generation, row), sealed like the
 * listing's continuation tokens (sealed-token.ts) under the same deployment key, but
 * bound to a different kind of associated data: a listing token never opens as a changes
 * cursor, nor the other way round, and neither opens for another user or folder.
 *
 * Layout before sealing: one kind byte, the generation and the row as int64 (17 bytes; a
 * sealed cursor is 60 characters).
 */

const KIND = 0xc1
const PAYLOAD_BYTES = 1 + 8 + 8

/** What a changes cursor is bound to: one user's feed of one parent (null: the root). */
export function changesBinding(userId: string, parentId: string | null): string {
  return `folder-service changes\u0000${userId}\u0000${parentId ?? ''}`
}

export class ChangesCursors {
  private readonly key: Buffer

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new Error('the cursor key must be 32 bytes')
    this.key = Buffer.from(key)
  }

  seal(position: ChangePosition, binding: string): string {
    const plain = Buffer.alloc(PAYLOAD_BYTES)
    plain[0] = KIND
    plain.writeBigInt64BE(BigInt(position.generation), 1)
    plain.writeBigInt64BE(BigInt(position.row), 9)
    return sealToken(this.key, plain, binding)
  }

  /** The position, or null for anything this key did not seal as a changes cursor for `binding`. */
  open(token: string, binding: string): ChangePosition | null {
    const plain = openToken(this.key, token, binding, PAYLOAD_BYTES)
    if (plain === null || plain.length !== PAYLOAD_BYTES || plain[0] !== KIND) return null
    const generation = plain.readBigInt64BE(1)
    const row = plain.readBigInt64BE(9)
    if (generation < 0n || row < 0n || generation > BigInt(Number.MAX_SAFE_INTEGER)) return null
    if (row > BigInt(Number.MAX_SAFE_INTEGER)) return null
    return { generation: Number(generation), row: Number(row) }
  }
}
