import type { ChangePosition, TreeKey } from '../store/store.js'
import { openToken, sealToken } from './sealed-token.js'

/**
 * Tree cursors: the `cursor` of GET /v1/folders/tree. Sealed like the changes cursors under
 * the deployment key, with their own kind byte and binding, so no other token opens as one,
 * nor one of another user or root.
 *
 * A cursor holds the log position the client has consumed and, while a subtree is being
 * sent (the first download, or a folder that came back into the tree), that subtree's top
 * and the last (depth, id) sent. Layout before sealing: kind, generation and row (int64),
 * the expansion's mode (0 none, 1 the whole tree, 2 one folder's subtree), its top (16 bytes),
 * the depth (int32) and the id (16 bytes) last sent: 54 bytes, a sealed cursor of 110 characters.
 */

const KIND = 0xc3
const PAYLOAD_BYTES = 1 + 8 + 8 + 1 + 16 + 4 + 16
const NONE = 0
const WHOLE_TREE = 1
const SUBTREE = 2

/** A subtree being sent: `top` null is the whole tree; `after` null: nothing sent yet. */
export interface Expansion {
  top: string | null
  after: TreeKey | null
}

export interface TreeCursor {
  position: ChangePosition
  expansion: Expansion | null
}

/** What a tree cursor is bound to: one user's tree below one root (null: the user's root). */
export function treeBinding(userId: string, rootId: string | null): string {
  return `folder-service tree\u0000${userId}\u0000${rootId ?? ''}`
}

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex')
const uuidText = (bytes: Buffer) => {
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export class TreeCursors {
  private readonly key: Buffer

  constructor(key: Uint8Array) {
    if (key.length !== 32) throw new Error('the cursor key must be 32 bytes')
    this.key = Buffer.from(key)
  }

  seal({ position, expansion }: TreeCursor, binding: string): string {
    const plain = Buffer.alloc(PAYLOAD_BYTES)
    plain[0] = KIND
    plain.writeBigInt64BE(BigInt(position.generation), 1)
    plain.writeBigInt64BE(BigInt(position.row), 9)
    if (expansion !== null) {
      plain[17] = expansion.top === null ? WHOLE_TREE : SUBTREE
      if (expansion.top !== null) uuidBytes(expansion.top).copy(plain, 18)
      if (expansion.after !== null) {
        plain.writeInt32BE(expansion.after.depth, 34)
        uuidBytes(expansion.after.id).copy(plain, 38)
      }
    }
    return sealToken(this.key, plain, binding)
  }

  /** The cursor, or null for anything this key did not seal as a tree cursor for `binding`. */
  open(token: string, binding: string): TreeCursor | null {
    const plain = openToken(this.key, token, binding, PAYLOAD_BYTES)
    if (plain === null || plain.length !== PAYLOAD_BYTES || plain[0] !== KIND) return null
    const generation = plain.readBigInt64BE(1)
    const row = plain.readBigInt64BE(9)
    const max = BigInt(Number.MAX_SAFE_INTEGER)
    if (generation < 0n || row < 0n || generation > max || row > max) return null
    const position = { generation: Number(generation), row: Number(row) }
    const mode = plain[17]
    if (mode === NONE) return { position, expansion: null }
    if (mode !== WHOLE_TREE && mode !== SUBTREE) return null
    const depth = plain.readInt32BE(34)
    if (depth < 0) return null
    const top = mode === SUBTREE ? uuidText(plain.subarray(18, 34)) : null
    const after = depth === 0 ? null : { depth, id: uuidText(plain.subarray(38, 54)) }
    return { position, expansion: { top, after } }
  }
}
