/**
 * The natural order's sort key (docs/api.md "Natural order"): one implementation of the rule,
 * used by the service to store keys, by both imports and by the typed client, so nothing
 * else restates it. Both databases compare the key byte by byte (SQLite BLOB, PostgreSQL
 * bytea); that comparison gives the rule's token order and its first tie-break (fewer digit
 * characters first); the listing breaks the remaining ties by name (code points),
 * created_at and id. No Node API: the folder browser runs this module too.
 *
 * Layout: the version byte, then one entry per token, then 0x00 and the name's count of
 * digit characters (2 bytes, big-endian).
 * - a character token is its UTF-8 bytes: UTF-8 compares by code point, and no entry of
 *   another character is a prefix of it;
 * - a number token is 0x30, the count of its digits without leading zeros (2 bytes), then
 *   those digits: a longer number is a larger one, and equal lengths compare digit by
 *   digit. 0x30 lies between every character up to U+002F (one byte, 0x01 to 0x2F) and
 *   every character from U+003A (lead byte 0x3A or more), which is the rule's place for
 *   numbers; U+0030 to U+0039 are never character tokens;
 * - 0x00 ends the tokens, below any entry: a name whose tokens are a prefix of another's
 *   comes first, and the digit count decides only between equal tokens.
 */

/**
 * The folding and layout this module writes. A change to either (another Unicode version's
 * NFKD or case mapping included) is a new version and a migration that re-keys every row:
 * keys of two versions never sort together.
 */
export const NATURAL_KEY_VERSION = 1

/**
 * The most token bytes a key holds. A 255-character name folds to at most 8,415 bytes
 * (U+FDFA becomes 18 characters), more than a PostgreSQL index entry holds (2,704 bytes,
 * beside the name and the other columns). Names past the bound (only those made mostly of
 * compatibility characters that expand, such as ㌖ or ﷺ, reach it) sort by their first
 * 1,280 key bytes, then by the tie-breaks.
 */
export const MAX_TOKEN_BYTES = 1280

const NUMBER_MARK = 0x30
const END_MARK = 0x00
const DIGIT_0 = 0x30
const DIGIT_9 = 0x39

/** The rule's folding: NFKD, nonspacing marks (Mn) removed, default lower case. */
function foldName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{Mn}/gu, '')
    .toLowerCase()
}

const encoder = new TextEncoder()

/**
 * foldName as UTF-8. ASCII text is its own NFKD and has no marks, so only its case folds:
 * done byte by byte, it costs a fourth of the general path (imports key every name).
 */
function foldedBytes(name: string): Uint8Array {
  const bytes = new Uint8Array(name.length)
  for (let i = 0; i < name.length; i++) {
    const unit = name.charCodeAt(i)
    if (unit > 0x7f) return encoder.encode(foldName(name))
    bytes[i] = unit >= 0x41 && unit <= 0x5a ? unit + 0x20 : unit
  }
  return bytes
}

/** The natural order's sort key of `name`, at NATURAL_KEY_VERSION. */
export function naturalKey(name: string): Uint8Array {
  const folded = foldedBytes(name)
  // Worst case: every byte a one-digit number of 4 bytes, plus version, end and count.
  const out = new Uint8Array(Math.min(folded.length * 4, MAX_TOKEN_BYTES) + 4)
  out[0] = NATURAL_KEY_VERSION
  let at = 1
  let digits = 0
  const limit = MAX_TOKEN_BYTES + 1
  for (let i = 0; i < folded.length && at < limit;) {
    const byte = folded[i] as number
    if (byte < DIGIT_0 || byte > DIGIT_9) {
      out[at++] = byte
      i++
      continue
    }
    let end = i
    while (end < folded.length && (folded[end] as number) >= DIGIT_0 && (folded[end] as number) <= DIGIT_9)
      end++
    digits += end - i
    let start = i
    while (start < end - 1 && folded[start] === DIGIT_0) start++
    // "0", "00": the value zero, of no significant digits
    if (folded[start] === DIGIT_0) start = end
    const length = end - start
    const entry = [NUMBER_MARK, length >> 8, length & 0xff]
    for (const value of entry) if (at < limit) out[at++] = value
    for (let d = start; d < end && at < limit; d++) out[at++] = folded[d] as number
    i = end
  }
  out[at++] = END_MARK
  out[at++] = Math.min(digits, 0xffff) >> 8
  out[at++] = Math.min(digits, 0xffff) & 0xff
  return out.subarray(0, at)
}

/** Byte order of two keys, as SQLite's memcmp and PostgreSQL's bytea comparison give it. */
export function compareKeys(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a[i] as number
    const y = b[i] as number
    if (x !== y) return x - y
  }
  return a.length - b.length
}
