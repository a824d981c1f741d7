import assert from 'node:assert/strict'

/**
 * What a walk of a folder by `next` must give whatever writes happen during it (docs/api.md
 * "Pagination"): the children modelled, their order, and the check a walk's pages must pass.
 */

/** A folder as a listing test models it: what its place in the order depends on. */
export interface ListedChild {
  id: string
  name: string
  created_at: number
}

/** A listing order over children: `compareNames`, then created_at, then id. */
export const listingComparator =
  (compareNames: (a: string, b: string) => number) =>
  (a: ListedChild, b: ListedChild): number =>
    compareNames(a.name, b.name) || a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * The cursor walk guarantee (docs/api.md "Continuation"): the folders a walk saw are in
 * strictly ascending order, and every child that no write touched was seen exactly once.
 */
export function assertWalkGuarantee(
  seen: readonly ListedChild[],
  children: readonly ListedChild[],
  touched: ReadonlySet<string>,
  compare: (a: ListedChild, b: ListedChild) => number,
): void {
  for (let i = 1; i < seen.length; i++) {
    assert.ok(compare(seen[i - 1] as ListedChild, seen[i] as ListedChild) < 0, `ascending at ${i}`)
  }
  for (const c of children) {
    if (touched.has(c.id)) continue
    assert.equal(seen.filter((s) => s.id === c.id).length, 1, `${c.name} stayed: seen exactly once`)
  }
}
