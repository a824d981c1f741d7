import { uuidFromHex } from '../ids.js'
import type { FolderKey } from '../store/store.js'
import type { Direction } from '../tokens/listing-cursor.js'

/**
 * The key right beside `key` in the listing order (name, created_at, id), on the side of
 * `direction`: no key lies strictly between the two. Ids are 128-bit numbers compared as
 * such by both backends (lower-case hex text in SQLite, uuid in PostgreSQL), so the
 * neighbour is the same name and time with the id one up (or down), wrapping into the next
 * (or previous) millisecond. A token made from it reads a page that includes `key` itself.
 */
export function adjacentKey(key: FolderKey, direction: Direction): FolderKey {
  const step = direction === 'after' ? 1n : -1n
  const id = BigInt(`0x${key.id.replaceAll('-', '')}`) + step
  const wraps = id < 0n || id >= ID_SPAN
  const hex = (wraps ? (id + ID_SPAN) % ID_SPAN : id).toString(16).padStart(32, '0')
  return {
    name: key.name,
    created_at: key.created_at + (wraps ? Number(step) : 0),
    id: uuidFromHex(hex),
  }
}

const ID_SPAN = 1n << 128n
