import { naturalKey } from '../ordering/natural-key.js'
import type { Direction } from '../tokens/listing-cursor.js'

/**
 * The natural sort key a continuation token seeks from when it holds only the first bytes
 * of its boundary's name (a long name, since renamed or deleted): a bound on the side that
 * repeats folders rather than skips them, as Listings.resolve does for the name order.
 *
 * The prefix's trailing digits may go on in the full name (12 of 123), so they are left
 * out. What remains folds to the start of the full name's folded text, except that a
 * trailing Σ may fold to final ς (U+03C2) in the prefix and to σ (U+03C3) in the name.
 * - after: the key of that stem is at or below the name's (ς is below σ; fewer tokens first);
 * - before: its tokens with every ς raised to σ, then 0xFF, above every extension (no
 *   entry of the key starts with 0xFF: UTF-8 never has it, number entries start with 0x30).
 */
export function naturalPrefixBound(prefix: string, direction: Direction): Uint8Array {
  const stem = naturalKey(prefix.replace(/[0-9]+$/u, ''))
  if (direction === 'after') return stem
  // without the stem's end mark and digit count (3 bytes)
  const tokens = stem.slice(0, stem.length - 3)
  for (let i = 0; i + 1 < tokens.length; i++) {
    if (tokens[i] === 0xcf && tokens[i + 1] === 0x82) tokens[i + 1] = 0x83
  }
  const bound = new Uint8Array(tokens.length + 1)
  bound.set(tokens)
  bound[tokens.length] = 0xff
  return bound
}
