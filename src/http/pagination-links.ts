import type { PageNavigation } from '../listing/listing.js'
import { DEFAULT_ORDER, MAX_PAGE } from '../schemas/list-folders-query.js'

/**
 * RFC 8288 `Link` header of a listing page served at `path`: first, prev, next and last,
 * as relative URLs that keep folder_id, the order (when not the default) and the effective limit. last is ceil(total / limit),
 * at least 1; first and last are plain offset links. With a changes cursor, a
 * rel="changes" link to `${path}/changes`.
 *
 * Without cursors (an offset page with no folders): no prev on page 1, no next on the last page or
 * beyond it; beyond the last page, prev points at the last page (the nearest one with
 * folders). With cursors, next and prev exist when their token does and carry it; their
 * page numbers are this page's plus or minus one, kept within 1 to MAX_PAGE (the token, not
 * the number, says where the page is). No link carries a page the query schema refuses.
 */
export function paginationLinks(
  path: string,
  { parentId, order, page, limit, total, cursors, changes }: PageNavigation,
): string {
  const folder = parentId === null ? '' : `folder_id=${parentId}&`
  // the default order is left out, as the links were before orders existed
  const base = `${path}?${folder}${order === undefined || order === DEFAULT_ORDER ? '' : `order=${order}&`}`
  const link = (target: number, rel: string, cursor: string | null = null) =>
    `<${base}page=${target}&limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}>; rel="${rel}"`
  const last = Math.min(Math.max(1, Math.ceil(total / limit)), MAX_PAGE)
  const links = [link(1, 'first')]
  if (cursors === undefined) {
    if (page > 1) links.push(link(Math.min(page - 1, last), 'prev'))
    if (page < last) links.push(link(page + 1, 'next'))
  } else {
    if (cursors.prev !== null) links.push(link(Math.max(page - 1, 1), 'prev', cursors.prev))
    if (cursors.next !== null) links.push(link(Math.min(page + 1, MAX_PAGE), 'next', cursors.next))
  }
  links.push(link(last, 'last'))
  // The changes feed has no order: it says what changed, and the client places it.
  if (changes !== undefined) {
    links.push(`<${path}/changes?${folder}cursor=${changes}>; rel="changes"`)
  }
  return links.join(', ')
}
