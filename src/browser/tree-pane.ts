import { folderComparator, type FolderTree, type ListingOrder } from '../client/index.js'
import { keyAction, trailOf, visibleRows, type TreeRow } from './tree-rows.js'

/**
 * The folder browser's tree pane: the user's folders as a WAI-ARIA tree beside the listing,
 * kept current by the page's one tree follow (shared-follow.ts), shown again each time a
 * batch reaches the present. Only expanded
 * folders' children get DOM nodes (tree-rows.ts). The open folder is marked
 * `aria-current="page"` and its ancestors expanded. One tab stop (a roving tabindex); the
 * keys are tree-rows.ts's. The DOM is built with createElement and textContent only.
 */

export interface TreePaneHandlers {
  /** opens the folder whose trail (ids from the root down) is given, in the listing */
  open(trail: string[]): void
}

export interface TreePane {
  /** Marks the open folder (its trail), sorts siblings in the listing's `order`, shows the pane. */
  show(trail: string[], order: ListingOrder): void
  /** Shows `tree` (a batch at the present) at the next frame. */
  update(tree: FolderTree): void
  /** Says the tree is being loaded (`true`) or is not available (`false`) until update(). */
  waiting(loading: boolean): void
  /** Hides the pane and forgets the tree (signed out); show() shows it again. */
  stop(): void
}

export function makeTreePane(
  pane: HTMLElement,
  list: HTMLElement,
  status: HTMLElement,
  handlers: TreePaneHandlers,
): TreePane {
  const expanded = new Set<string>()
  let tree: FolderTree | null = null
  let rows: TreeRow[] = []
  let openTrail: string[] = []
  let compare = folderComparator()
  /** the row that is the tab stop, kept across renders by id */
  let current: string | null = null
  let frame = 0

  const itemOf = (id: string) =>
    [...list.children].find((li): li is HTMLElement => li instanceof HTMLElement && li.dataset.id === id)

  function render(): void {
    frame = 0
    if (tree === null) return
    const hadFocus = list.contains(document.activeElement)
    rows = visibleRows(tree, expanded, compare)
    const open = openTrail.at(-1)
    if (!rows.some((row) => row.folder.id === current)) current = rows[0]?.folder.id ?? null
    list.replaceChildren(
      ...rows.map((row) => {
        const li = document.createElement('li')
        li.setAttribute('role', 'treeitem')
        li.setAttribute('aria-level', String(row.level))
        li.setAttribute('aria-setsize', String(row.siblings))
        li.setAttribute('aria-posinset', String(row.position))
        if (row.expanded !== null) li.setAttribute('aria-expanded', String(row.expanded))
        if (row.folder.id === open) li.setAttribute('aria-current', 'page')
        li.dataset.id = row.folder.id
        // Through the CSSOM, which the CSP allows (a style attribute it would refuse).
        li.style.setProperty('--level', String(row.level - 1))
        li.tabIndex = row.folder.id === current ? 0 : -1
        const twisty = document.createElement('span')
        twisty.className = 'twisty'
        twisty.setAttribute('aria-hidden', 'true')
        const name = document.createElement('span')
        name.className = 'tree-name'
        name.textContent = row.folder.name
        name.title = row.folder.name // the whole name, where the stylesheet cuts a long one
        li.append(twisty, name)
        return li
      }),
    )
    status.hidden = rows.length > 0
    status.textContent = rows.length > 0 ? '' : 'No folders yet.'
    if (hadFocus && current !== null) itemOf(current)?.focus({ preventScroll: true })
  }

  /** Renders once per frame, however many batches arrive. */
  const schedule = () => {
    if (frame === 0) frame = requestAnimationFrame(render)
  }

  function focusRow(id: string): void {
    current = id
    for (const li of list.children) if (li instanceof HTMLElement) li.tabIndex = li.dataset.id === id ? 0 : -1
    itemOf(id)?.focus()
  }

  function openFolder(id: string): void {
    const trail = tree === null ? null : trailOf(tree, id)
    if (trail !== null) handlers.open(trail)
  }

  function toggle(id: string, open: boolean): void {
    if (open) expanded.add(id)
    else expanded.delete(id)
    current = id
    render()
  }

  list.addEventListener('keydown', (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return
    const id = event.target instanceof HTMLElement ? event.target.dataset.id : undefined
    const action = keyAction(
      rows,
      rows.findIndex((row) => row.folder.id === id),
      event.key,
    )
    if (action === null) return
    event.preventDefault() // the arrow keys would scroll the page otherwise
    if ('focus' in action) {
      const to = rows[action.focus]
      if (to !== undefined) focusRow(to.folder.id)
    } else if ('expand' in action) toggle(action.expand, true)
    else if ('collapse' in action) toggle(action.collapse, false)
    else openFolder(action.open)
  })

  // A click on the twisty expands or collapses; anywhere else on the row opens the folder.
  list.addEventListener('click', (event) => {
    const target = event.target instanceof Element ? event.target : null
    const li = target?.closest<HTMLElement>('[role="treeitem"]')
    const id = li?.dataset.id
    if (id === undefined) return
    if (target?.classList.contains('twisty') === true && li?.hasAttribute('aria-expanded') === true)
      toggle(id, !expanded.has(id))
    else {
      current = id
      openFolder(id)
    }
  })

  return {
    show(trail, order) {
      openTrail = trail
      compare = folderComparator(order)
      for (const id of trail.slice(0, -1)) expanded.add(id)
      pane.hidden = false
      schedule()
    },
    update(next) {
      tree = next
      schedule()
    },
    waiting(loading) {
      // The listing beside shows why it is not available (signed out, frozen, unavailable).
      if (!loading) {
        tree = null
        list.replaceChildren()
      }
      if (tree !== null) return
      status.hidden = false
      status.textContent = loading
        ? 'Loading the folder tree…'
        : 'The folder tree is not available right now.'
    },
    stop() {
      cancelAnimationFrame(frame)
      frame = 0
      pane.hidden = true
      tree = null
      list.replaceChildren()
    },
  }
}
