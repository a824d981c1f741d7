/**
 * RFC 8288 `Link` header of a listing page: first, prev, next and last, as relative URLs
 * that keep folder_id and the effective limit. last is ceil(total / limit), at least 1.
 * There is no prev on page 1 and no next on the last page or beyond it; beyond the last
 * page, prev points at the last page (the nearest one with folders).
 */
export function paginationLinks(
  path: string,
  folderId: string | null,
  page: number,
  limit: number,
  total: number,
): string {
  const base = folderId === null ? `${path}?` : `${path}?folder_id=${folderId}&`
  const link = (target: number, rel: string) => `<${base}page=${target}&limit=${limit}>; rel="${rel}"`
  const last = Math.max(1, Math.ceil(total / limit))
  const links = [link(1, 'first')]
  if (page > 1) links.push(link(Math.min(page - 1, last), 'prev'))
  if (page < last) links.push(link(page + 1, 'next'))
  links.push(link(last, 'last'))
  return links.join(', ')
}
