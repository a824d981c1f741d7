import type { Folder, ListingOrder } from './folder-service-client.js'
import { compareKeys, naturalKey } from '../ordering/natural-key.js'

/**
 * The listing's order (docs/api.md "Sorting"): name in Unicode code point order, then
 * created_at, then id. JavaScript compares strings by UTF-16 code unit, which puts U+E000
 * to U+FFFF after the surrogates of U+10000 and above; shifting the code units as below
 * restores code point order (the surrogates move above every other BMP unit).
 */

function codePointKey(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000
  return unit >= 0xe000 ? unit - 0x800 : unit
}

export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointKey(x) - codePointKey(y)
  }
  return a.length - b.length
}

/** Timestamps share one format (UTC, milliseconds, `Z`) and ids are lower case: plain comparison orders them. */
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

export function compareFolders(a: Folder, b: Folder): number {
  return (
    compareCodePoints(a.name, b.name) || compareText(a.created_at, b.created_at) || compareText(a.id, b.id)
  )
}

/** Keys of the folders sorted so far: a watched listing is sorted again at every change. */
const naturalKeys = new WeakMap<Folder, Uint8Array>()

function naturalKeyOf(folder: Folder): Uint8Array {
  let key = naturalKeys.get(folder)
  if (key === undefined) naturalKeys.set(folder, (key = naturalKey(folder.name)))
  return key
}

/**
 * The natural order (docs/api.md "Natural order"), by the service's own sort key: then the
 * tie-breaks of compareFolders.
 */
export function compareFoldersNaturally(a: Folder, b: Folder): number {
  return compareKeys(naturalKeyOf(a), naturalKeyOf(b)) || compareFolders(a, b)
}

/** The comparison of a listing order (absent: the service's default, `name`). */
export function folderComparator(order: ListingOrder = 'name'): (a: Folder, b: Folder) => number {
  return order === 'name_natural' ? compareFoldersNaturally : compareFolders
}
