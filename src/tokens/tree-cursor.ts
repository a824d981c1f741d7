import type { ChangePosition, TreePath } from '../store/store.js'
import type { Expansion } from '../store/tree-answer.js'
import { openToken, sealToken } from './sealed-token.js'
import { FULL_PATH_LEVELS, HEAD_LEVELS } from '../store/tree-walk.js'

/**
 * Tree cursors: the `cursor` of GET /v1/folders/tree. Sealed like the changes cursors under
 * the deployment key, with their own kind byte and binding, so no other token opens as one,
 * nor one of another user or root.
 *
 * A cursor holds the log position the client has consumed and, while a subtree is being
 * sent (the first download, or a folder that came back into the tree), that subtree's top
 * and the path of the last folder sent (src/store/tree-walk.ts). Layout before sealing:
 * kind, generation and row (int64), the expansion's mode (0 none, 1 the whole tree, 2 one
 * folder's subtree), its top (16 bytes), the path's depth (int32, 0: nothing sent yet), then
 * its ids (16 bytes each): all of them up to FULL_PATH_LEVELS, else HEAD_LEVELS, the last
 * id and the 16-byte digest. At most 150 bytes, a sealed cursor of at most 238 characters.
 *
 * Cursors of the earlier layout (kind 0xc3: a breadth-first download's (depth, id)) open
 * while they only follow the log; one in the middle of a download is expired (410
 * CURSOR_EXPIRED: start a new download), since its place means nothing to the walk.
 */

const KIND = 0xc4
const HEADER_BYTES = 1 + 8 + 8 + 1 + 16 + 4
const ID_BYTES = 16
const EARLIER_KIND = 0xc3
const EARLIER_BYTES = 54
const NONE = 0
const WHOLE_TREE = 1
const SUBTREE = 2

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
    const after = expansion?.after ?? null
    const ids = after === null ? [] : after.tail === null ? after.head : [...after.head, after.tail.id]
    const plain = Buffer.alloc(HEADER_BYTES + ids.length * ID_BYTES + (after?.tail ? ID_BYTES : 0))
    plain[0] = KIND
    plain.writeBigInt64BE(BigInt(position.generation), 1)
    plain.writeBigInt64BE(BigInt(position.row), 9)
    if (expansion !== null) {
      plain[17] = expansion.top === null ? WHOLE_TREE : SUBTREE
      if (expansion.top !== null) uuidBytes(expansion.top).copy(plain, 18)
    }
    plain.writeInt32BE(after?.depth ?? 0, 34)
    ids.forEach((id, i) => uuidBytes(id).copy(plain, HEADER_BYTES + i * ID_BYTES))
    after?.tail?.digest.copy(plain, HEADER_BYTES + ids.length * ID_BYTES)
    return sealToken(this.key, plain, binding)
  }

  /**
   * The cursor; 'expired' for a cursor of the earlier layout in the middle of a download;
   * null for anything this key did not seal as a tree cursor for `binding`.
   */
  open(token: string, binding: string): TreeCursor | 'expired' | null {
    const plain = openToken(this.key, token, binding, HEADER_BYTES)
    if (plain === null) return null
    const kind = plain[0]
    if (kind === EARLIER_KIND && plain.length === EARLIER_BYTES) {
      const position = positionOf(plain)
      if (position === null) return null
      return plain[17] === NONE ? { position, expansion: null } : 'expired'
    }
    if (kind !== KIND || plain.length < HEADER_BYTES) return null
    const position = positionOf(plain)
    if (position === null) return null
    const mode = plain[17]
    const depth = plain.readInt32BE(34)
    if (mode === NONE)
      return plain.length === HEADER_BYTES && depth === 0 ? { position, expansion: null } : null
    if ((mode !== WHOLE_TREE && mode !== SUBTREE) || depth < 0) return null
    const deep = depth > FULL_PATH_LEVELS
    const stored = deep ? HEAD_LEVELS + 1 : depth
    if (plain.length !== HEADER_BYTES + (stored + (deep ? 1 : 0)) * ID_BYTES) return null
    const ids = Array.from({ length: stored }, (_, i) =>
      uuidText(plain.subarray(HEADER_BYTES + i * ID_BYTES, HEADER_BYTES + (i + 1) * ID_BYTES)),
    )
    const top = mode === SUBTREE ? uuidText(plain.subarray(18, 34)) : null
    if (depth === 0) return { position, expansion: { top, after: null } }
    const digestAt = HEADER_BYTES + stored * ID_BYTES
    const after: TreePath = deep
      ? {
          depth,
          head: ids.slice(0, HEAD_LEVELS),
          tail: { id: ids[HEAD_LEVELS] as string, digest: Buffer.from(plain.subarray(digestAt)) },
        }
      : { depth, head: ids, tail: null }
    return { position, expansion: { top, after } }
  }
}

/** The log position of a cursor of either layout, or null when out of range. */
function positionOf(plain: Buffer): ChangePosition | null {
  const generation = plain.readBigInt64BE(1)
  const row = plain.readBigInt64BE(9)
  const max = BigInt(Number.MAX_SAFE_INTEGER)
  if (generation < 0n || row < 0n || generation > max || row > max) return null
  return { generation: Number(generation), row: Number(row) }
}
