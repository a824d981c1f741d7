/**
 * RFC 8288 `Link` header parsing, enough for the service's pagination links: each
 * `<target>; rel="a b"` entry gives its target, resolved against the URL of the response
 * (a relative link means relative to the page that carried it), to each relation it names.
 * Parameters other than `rel` are ignored; the first entry of a relation wins (RFC 8288
 * section 3.3 allows a relation only once per context for our purposes).
 */

/** Absolute URLs by relation; the service sends `first`, `prev`, `next` and `last`. */
export interface PageLinks {
  first?: string
  prev?: string
  next?: string
  last?: string
  [rel: string]: string | undefined
}

/** `<uri>` then `;`-separated parameters, up to the next top-level comma. */
const LINK_VALUE = /<([^>]*)>((?:\s*;\s*[^;,"=\s]+\s*(?:=\s*(?:"(?:[^"\\]|\\.)*"|[^;,"\s]*))?)*)/g
const REL_PARAM = /;\s*rel\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;,"\s]+))/i

export function parseLinkHeader(header: string | null, responseUrl: string): PageLinks {
  const links: PageLinks = {}
  if (header === null) return links
  for (const match of header.matchAll(LINK_VALUE)) {
    const [, target = '', params = ''] = match
    const rel = REL_PARAM.exec(params)
    const relations = (rel?.[1] ?? rel?.[2] ?? '').replace(/\\(.)/g, '$1')
    let href: string
    try {
      href = new URL(target, responseUrl).href
    } catch {
      continue // an unusable target is skipped, not fatal: the page itself is still good
    }
    for (const name of relations.toLowerCase().split(/\s+/)) {
      if (name !== '' && links[name] === undefined) links[name] = href
    }
  }
  return links
}
