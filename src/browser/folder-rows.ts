import type { Folder } from '../client/index.js'

/**
 * The rows of the folder list: one link per folder, named by the service, with its modified
 * time (shown as a column on wide screens, by the stylesheet). The list is one tab stop
 * (a roving tabindex): Up and Down, Home and End move between rows, Enter opens one (the
 * link's own behaviour), so Tab goes past fifty folders at once to the pager.
 */

/** The reader's locale and time zone (the defaults of Intl). */
const MODIFIED = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' })

const rowLinks = (list: HTMLElement) => [...list.querySelectorAll<HTMLAnchorElement>('a.name')]

/** Makes `link` the list's one tab stop. */
function makeCurrent(list: HTMLElement, link: HTMLAnchorElement): void {
  for (const other of rowLinks(list)) other.tabIndex = other === link ? 0 : -1
}

/** The id of the row holding the focus, or null when the focus is elsewhere. */
export function focusedRow(list: HTMLElement): string | null {
  const active = document.activeElement
  return active instanceof HTMLAnchorElement && list.contains(active) ? (active.dataset.id ?? null) : null
}

/**
 * Replaces the rows (`empty` is shown when there are none). A row that held the focus keeps
 * it when it is still listed; otherwise its place in the list does. The line of an empty
 * list counts as the first place: a list that held the focus keeps it whether rows come or
 * go, rather than letting it fall to the page's body.
 */
export function renderRows(
  list: HTMLElement,
  folders: readonly Folder[],
  hrefOf: (folder: Folder) => string,
  empty: string,
): void {
  const focused = focusedRow(list)
  const focusedIndex = focused === null ? -1 : rowLinks(list).findIndex((a) => a.dataset.id === focused)
  const held = focused !== null || emptyLineFocused(list)
  list.replaceChildren(
    ...folders.map((folder) => {
      const li = document.createElement('li')
      const a = document.createElement('a')
      a.className = 'name'
      a.href = hrefOf(folder)
      a.dataset.id = folder.id
      a.tabIndex = -1
      a.textContent = folder.name
      a.title = folder.name // the whole name, where the stylesheet cuts a long one
      const time = document.createElement('time')
      time.className = 'modified'
      time.dateTime = folder.updated_at
      const label = document.createElement('span')
      label.className = 'visually-hidden'
      label.textContent = 'modified '
      time.append(label, MODIFIED.format(new Date(folder.updated_at)))
      li.append(a, time)
      return li
    }),
  )
  if (folders.length === 0) {
    const li = document.createElement('li')
    li.className = 'empty'
    li.textContent = empty
    // Focusable by script (not a tab stop): where the focus goes when an empty folder opens.
    li.tabIndex = -1
    list.append(li)
    if (held) li.focus({ preventScroll: true })
    return
  }
  const links = rowLinks(list)
  const kept = links.find((a) => a.dataset.id === focused)
  const current = kept ?? links[Math.min(Math.max(focusedIndex, 0), links.length - 1)]
  if (current !== undefined) makeCurrent(list, current)
  // In place: the row keeps the focus without scrolling the page to it.
  if (held) current?.focus({ preventScroll: true })
}

/** Whether the focus is on the line an empty `list` shows. */
function emptyLineFocused(list: HTMLElement): boolean {
  const active = document.activeElement
  return active instanceof HTMLLIElement && active.classList.contains('empty') && list.contains(active)
}

/**
 * Focuses the row of `id` when it is listed, else the first row; in an empty list, the line
 * that says so (the link that opened the folder is gone, and the focus must not fall to the
 * page's body). False when there is neither.
 */
export function focusRow(list: HTMLElement, id: string | null): boolean {
  const links = rowLinks(list)
  const link = links.find((a) => a.dataset.id === id) ?? links[0]
  if (link === undefined) {
    const empty = list.querySelector<HTMLElement>('li.empty')
    empty?.focus()
    return empty !== null
  }
  makeCurrent(list, link)
  link.focus()
  return true
}

/** The row each key moves to, from row `at` of `count` (clamped by the caller). */
const ROW_KEYS = new Map<string, (at: number, count: number) => number>([
  ['ArrowDown', (at) => at + 1],
  ['ArrowUp', (at) => at - 1],
  ['Home', () => 0],
  ['End', (_at, count) => count - 1],
])

/** Arrow keys, Home and End move the focus between the rows of `list`. */
export function enableRowKeys(list: HTMLElement): void {
  list.addEventListener('focusin', (event) => {
    if (event.target instanceof HTMLAnchorElement) makeCurrent(list, event.target)
  })
  list.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return
    const links = rowLinks(list)
    const at = links.findIndex((a) => a === document.activeElement)
    if (at < 0) return
    const to = ROW_KEYS.get(event.key)?.(at, links.length)
    if (to === undefined) return
    event.preventDefault() // the keys would scroll the page otherwise
    links[Math.min(Math.max(to, 0), links.length - 1)]?.focus()
  })
}
