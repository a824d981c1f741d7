/**
 * Where the browser is, kept in the URL fragment so that reload, the back button and a
 * bookmark all land on the same place (a fragment is not sent with requests):
 *
 *   #in=<id>&in=<id>&page=2&limit=20&order=name&cursor=<token>
 *
 * `in` is the trail of folder ids from the root; page, limit and cursor are those of the
 * listing, copied from a Link target; `order=name` is the exact order (absent: the natural
 * order, the browser's default). Folder names are never taken from the fragment (anyone
 * can write one into a link): they come from the service (folder-names.ts). `in=<id>:<text>`,
 * the form of older bookmarks, is accepted and its text ignored.
 */

/** The listing orders of the service (docs/api.md "Sorting"). */
export type ListingOrder = 'name' | 'name_natural'

/** A person reads folders in the order of their file manager; exact order is one click away. */
const DEFAULT_ORDER: ListingOrder = 'name_natural'

export interface ViewState {
  /** folder ids from the root down to the open folder */
  trail: string[]
  page?: number
  limit?: number
  cursor?: string
  /** absent: DEFAULT_ORDER */
  order?: ListingOrder
  /**
   * The fragment names a folder by something that is no folder id (a mangled or made-up
   * link): the page says so rather than guess where it meant to go.
   */
  broken?: true
}

const CRUMB = /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})(?::.*)?$/s
const POSITIVE = /^[1-9][0-9]*$/
/** The service's bounds (docs/api.md "Query parameters"): larger values would be a 400. */
const MAX_PAGE = 2147483647
const MAX_LIMIT = 100

export function parseViewState(hash: string): ViewState {
  const params = new URLSearchParams(hash.replace(/^#/, ''))
  const trail: string[] = []
  let broken = false
  for (const value of params.getAll('in')) {
    const match = CRUMB.exec(value)
    if (match?.[1] === undefined) broken = true
    else trail.push(match[1].toLowerCase())
  }
  const state: ViewState = { trail }
  const page = params.get('page')
  const limit = params.get('limit')
  const cursor = params.get('cursor')
  const order = params.get('order')
  // Beyond the last page is not an error to the service; beyond its range is: clamp to it.
  if (page !== null && POSITIVE.test(page)) state.page = Math.min(Number(page), MAX_PAGE)
  if (limit !== null && POSITIVE.test(limit)) state.limit = Math.min(Number(limit), MAX_LIMIT)
  if (cursor !== null && cursor !== '') state.cursor = cursor
  if (order === 'name' || order === 'name_natural') state.order = order
  if (broken) state.broken = true
  return state
}

/** The order a view lists in. */
export function orderOf(state: ViewState): ListingOrder {
  return state.order ?? DEFAULT_ORDER
}

export function viewHash(state: ViewState): string {
  const params = new URLSearchParams()
  for (const id of state.trail) params.append('in', id)
  if (state.page !== undefined) params.set('page', String(state.page))
  if (state.limit !== undefined) params.set('limit', String(state.limit))
  if (orderOf(state) !== DEFAULT_ORDER) params.set('order', orderOf(state))
  if (state.cursor !== undefined) params.set('cursor', state.cursor)
  return `#${params.toString()}`
}

/**
 * The state a Link target leads to: the same trail and order, with the link's own page,
 * limit and cursor (whatever it carries is passed on; nothing is computed from page numbers).
 */
export function stateForLink(view: ViewState, href: string): ViewState {
  const query = new URL(href).searchParams
  const state = parseViewState(
    new URLSearchParams(
      [...query].filter(([name]) => name === 'page' || name === 'limit' || name === 'cursor'),
    ).toString(),
  )
  return { ...state, trail: view.trail, ...(view.order === undefined ? {} : { order: view.order }) }
}
