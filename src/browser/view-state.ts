/**
 * Where the browser is, kept in the URL fragment so that reload, the back button and a
 * bookmark all land on the same place, and so that folder names never reach the server's
 * or a proxy's logs (a fragment is not sent with requests):
 *
 *   #in=<id>:<name>&in=<id>:<name>&page=2&limit=20&cursor=<token>
 *
 * `in` is the breadcrumb trail from the root (a UUID has a fixed length, so the first `:`
 * ends it); page, limit and cursor are those of the listing, copied from a Link target.
 */

export interface Crumb {
  id: string
  name: string
}

export interface ViewState {
  trail: Crumb[]
  page?: number
  limit?: number
  cursor?: string
}

const CRUMB = /^([0-9a-fA-F-]{36}):(.*)$/s
const POSITIVE = /^[1-9][0-9]{0,9}$/

export function parseViewState(hash: string): ViewState {
  const params = new URLSearchParams(hash.replace(/^#/, ''))
  const trail: Crumb[] = []
  for (const value of params.getAll('in')) {
    const match = CRUMB.exec(value)
    if (match !== null) trail.push({ id: match[1] ?? '', name: match[2] ?? '' })
  }
  const state: ViewState = { trail }
  const page = params.get('page')
  const limit = params.get('limit')
  const cursor = params.get('cursor')
  if (page !== null && POSITIVE.test(page)) state.page = Number(page)
  if (limit !== null && POSITIVE.test(limit)) state.limit = Number(limit)
  if (cursor !== null && cursor !== '') state.cursor = cursor
  return state
}

export function viewHash(state: ViewState): string {
  const params = new URLSearchParams()
  for (const crumb of state.trail) params.append('in', `${crumb.id}:${crumb.name}`)
  if (state.page !== undefined) params.set('page', String(state.page))
  if (state.limit !== undefined) params.set('limit', String(state.limit))
  if (state.cursor !== undefined) params.set('cursor', state.cursor)
  return `#${params.toString()}`
}

/**
 * The state a Link target leads to: the same trail, with the link's own page, limit and
 * cursor (whatever it carries is passed on; nothing is computed from page numbers).
 */
export function stateForLink(trail: Crumb[], href: string): ViewState {
  const query = new URL(href).searchParams
  const state = parseViewState(
    new URLSearchParams(
      [...query].filter(([name]) => name === 'page' || name === 'limit' || name === 'cursor'),
    ).toString(),
  )
  return { ...state, trail }
}
