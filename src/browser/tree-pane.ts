import {
  folderComparator,
  type FolderServiceClient,
  type FolderTree,
  type ListingOrder,
} from '../client/index.js'
import { keyAction, trailOf, visibleRows, type TreeRow } from './tree-rows.js'

/**
 * The folder browser's tree pane: the user's folders as a WAI-ARIA tree beside the listing,
 * kept current by the client's tree follow (client.tree(): one download, then the changes
 * held by the service), shown again each time a batch reaches the present. Only expanded
 * folders' children get DOM nodes (tree-rows.ts). The open folder is marked
 * `aria-current="page"` and its ancestors expanded. One tab stop (a roving tabindex); the
 * keys are tree-rows.ts's. The DOM is built with createElement and textContent only.
 */

export interface TreePaneHandlers {
  /** opens the folder whose trail (ids from the root down) is given, in the listing */
  open(trail: string[]): void
}

export interface TreePane {
  /**
   * Marks the open folder (its trail), sorts siblings in the listing's `order`, and starts
   * following the tree when not following.
   */
  show(trail: string[], order: ListingOrder): void
  /** Stops following and hides the pane (signed out); show() starts again. */
  stop(): void
}

export function makeTreePane(
  pane: HTMLElement,
  list: HTMLElement,
  status: HTMLElement,
  client: FolderServiceClient,
  handlers: TreePaneHandlers,
): TreePane {
  const expanded = new Set<string>()
  let tree: FolderTree | null = null
  let rows: TreeRow[] = []
  let openTrail: string[] = []
  let compare = folderComparator()
  /** the row that is the tab stop, kept across renders by id */
  let current: string | null = null
  let following: AbortController | null = null
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

  async function follow(signal: AbortSignal): Promise<void> {
    status.hidden = false
    status.textContent = 'Loading the folder tree…'
    try {
      for await (const batch of client.tree({ signal })) {
        tree = batch.tree
        if (batch.atPresent) schedule()
      }
    } catch {
      if (signal.aborted) return
      // The listing beside shows why (signed out, frozen, unavailable); the pane says it stopped.
      tree = null
      list.replaceChildren()
      status.hidden = false
      status.textContent = 'The folder tree is not available right now.'
      following = null
    }
  }

  function stop(): void {
    following?.abort()
    following = null
    cancelAnimationFrame(frame)
    frame = 0
  }

  // No held request while nobody looks; on return the tree is downloaded afresh.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden') stop()
    else if (!pane.hidden && following === null) start()
  })

  function start(): void {
    const controller = new AbortController()
    following = controller
    void follow(controller.signal)
  }

  return {
    show(trail, order) {
      openTrail = trail
      compare = folderComparator(order)
      for (const id of trail.slice(0, -1)) expanded.add(id)
      pane.hidden = false
      if (following === null && document.visibilityState !== 'hidden') start()
      schedule()
    },
    stop() {
      stop()
      pane.hidden = true
      tree = null
      list.replaceChildren()
    },
  }
}
