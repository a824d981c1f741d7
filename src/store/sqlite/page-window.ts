/**
 * Where a page lies in an ordered set of `total` rows, and from which end to read it.
 * Skipping rows costs time proportional to how many are skipped, so a page in the second
 * half is read from the end in reverse order (and flipped back): the last page of 100,000
 * folders then costs what the first does. Used by the SQLite adapter; PostgreSQL does the
 * same inside its listing statement (postgres/postgres-statements.ts).
 */
export interface PageWindow {
  /** rows to skip from the chosen end */
  offset: number
  /** rows to read */
  limit: number
  /** read in descending order and reverse the result */
  fromEnd: boolean
}

/** null when the page lies wholly beyond the last row. */
export function pageWindow(total: number, page: number, limit: number): PageWindow | null {
  const offset = (page - 1) * limit
  if (offset >= total) return null
  const rows = Math.min(limit, total - offset)
  const offsetFromEnd = total - offset - rows
  return offsetFromEnd < offset
    ? { offset: offsetFromEnd, limit: rows, fromEnd: true }
    : { offset, limit: rows, fromEnd: false }
}
