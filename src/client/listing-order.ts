import { compareCodePoints } from '../ordering/code-points.js'
import type { ListingOrder } from '../ordering/listing-orders.js'
import { compareKeys, naturalKey } from '../ordering/natural-key.js'
import type { Folder } from './types.js'

/**
 * The listing's order (docs/api.md "Sorting"): name in Unicode code point order, then
 * created_at, then id.
 */

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
