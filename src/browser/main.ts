import { FolderServiceClient, FolderServiceError, type FolderPage } from '../client/index.js'
import { folderName, lookUpNames, rememberNames } from './folder-names.js'
import { followChanges } from './live-follow.js'
import { clearSessionId, isSessionId, readSessionId, setSessionId } from './session-cookie.js'
import { parseViewState, stateForLink, viewHash, type ViewState } from './view-state.js'

/**
 * The folder browser page: renders the listing named by the URL fragment (view-state.ts)
 * with the typed client, and the service's error states, and keeps the shown page live
 * (live-follow.ts) while the tab is visible. The DOM is built with createElement and
 * textContent only (the CSP enforces Trusted Types).
 */

const client = new FolderServiceClient({
  baseUrl: location.origin,
  // A person is waiting: one retry of a 429/503, and only after a short Retry-After.
  maxRetries: 1,
  maxRetryDelayMs: 5_000,
  conditionalRequests: true,
})

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id)
  if (found === null) throw new Error(`index.html lacks #${id}`)
  return found as T
}

const ui = {
  signIn: element<HTMLElement>('sign-in'),
  signInForm: element<HTMLFormElement>('sign-in-form'),
  signInReason: element<HTMLElement>('sign-in-reason'),
  signInError: element<HTMLElement>('sign-in-error'),
  sessionInput: element<HTMLInputElement>('session-id'),
  signOut: element<HTMLButtonElement>('sign-out'),
  who: element<HTMLElement>('who'),
  browser: element<HTMLElement>('browser'),
  breadcrumbs: element<HTMLOListElement>('breadcrumbs'),
  state: element<HTMLElement>('state'),
  stateText: element<HTMLElement>('state-text'),
  retry: element<HTMLButtonElement>('retry'),
  toRoot: element<HTMLAnchorElement>('to-root'),
  folders: element<HTMLUListElement>('folders'),
  prev: element<HTMLAnchorElement>('prev'),
  next: element<HTMLAnchorElement>('next'),
  position: element<HTMLElement>('position'),
  limit: element<HTMLSelectElement>('limit'),
  total: element<HTMLElement>('total'),
}

let inFlight: AbortController | null = null
/** stops following the open page's changes; null when not following */
let stopLive: (() => void) | null = null

function endLive(): void {
  stopLive?.()
  stopLive = null
}

function showSignIn(reason: string | null): void {
  ui.browser.hidden = true
  ui.signOut.hidden = true
  ui.who.textContent = ''
  ui.signIn.hidden = false
  ui.signInReason.hidden = reason === null
  ui.signInReason.textContent = reason ?? ''
  ui.sessionInput.focus()
}

/** A problem state above the (emptied) listing; `retry` offers "Try again", `root` a way out. */
function showState(text: string, options: { retry?: boolean; root?: boolean } = {}): void {
  ui.state.hidden = false
  ui.stateText.textContent = text
  ui.retry.hidden = options.retry !== true
  ui.toRoot.hidden = options.root !== true
  ui.folders.replaceChildren()
  ui.prev.hidden = true
  ui.next.hidden = true
  ui.position.textContent = ''
  ui.total.textContent = ''
}

function renderBreadcrumbs(trail: string[]): void {
  const items = [{ label: 'Home', state: { trail: [] } as ViewState }]
  // A name not known yet reads "Folder" until lookUpNames finds it in the parent's listing.
  trail.forEach((id, i) =>
    items.push({ label: folderName(id) ?? 'Folder', state: { trail: trail.slice(0, i + 1) } }),
  )
  ui.breadcrumbs.replaceChildren(
    ...items.map((item, i) => {
      const li = document.createElement('li')
      if (i === items.length - 1) {
        const current = document.createElement('span')
        current.setAttribute('aria-current', 'page')
        current.textContent = item.label
        li.append(current)
      } else {
        const a = document.createElement('a')
        a.href = viewHash(item.state)
        a.textContent = item.label
        li.append(a)
      }
      return li
    }),
  )
}

function setLink(anchor: HTMLAnchorElement, href: string | undefined, trail: string[]): void {
  anchor.hidden = href === undefined
  if (href === undefined) anchor.removeAttribute('href')
  else anchor.href = viewHash(stateForLink(trail, href))
}

function renderPage(view: ViewState, page: FolderPage): void {
  const { folders, total, page: number, limit } = page.body
  rememberNames(folders)
  ui.state.hidden = true
  const pageSize = view.limit === undefined ? {} : { limit: view.limit }
  ui.folders.replaceChildren(
    ...folders.map((folder) => {
      const li = document.createElement('li')
      const a = document.createElement('a')
      a.href = viewHash({ trail: [...view.trail, folder.id], ...pageSize })
      a.textContent = folder.name
      li.append(a)
      return li
    }),
  )
  if (folders.length === 0) {
    const li = document.createElement('li')
    li.className = 'empty'
    li.textContent = total === 0 ? 'No folders here.' : 'No folders on this page.'
    ui.folders.append(li)
  }
  setLink(ui.prev, page.links.prev, view.trail)
  setLink(ui.next, page.links.next, view.trail)
  ui.position.textContent = `Page ${number} of ${Math.max(1, Math.ceil(total / limit))}`
  ui.total.textContent = `${total} ${total === 1 ? 'folder' : 'folders'}`
  ui.limit.value = String(limit)
  ui.who.textContent =
    folders[0] === undefined ? ui.who.textContent : `Signed in as ${folders[0].owner.username}`
}

function renderError(error: unknown): void {
  if (!(error instanceof FolderServiceError)) {
    showState(`Something went wrong in this page: ${String(error)}`, { retry: true })
    return
  }
  switch (error.code) {
    case 'UNAUTHORIZED':
      showSignIn('Your session is missing, invalid or expired. Sign in again.')
      return
    case 'FROZEN_ACCOUNT':
      showState('This account is frozen: its folders cannot be listed. Contact your administrator.')
      return
    case 'NOT_FOUND':
      showState('This folder is gone: it was deleted or moved, or it is not yours.', { root: true })
      return
    case 'UNAVAILABLE':
    case 'RATE_LIMITED':
    case 'NETWORK_ERROR':
      showState('The service is unavailable right now. Try again in a moment.', { retry: true })
      return
    default:
      showState(
        `The service answered ${error.status} ${error.code}: ${error.detail}` +
          (error.requestId === null ? '' : ` (request ${error.requestId})`),
        { retry: true },
      )
  }
}

/** The last page when `page` lies beyond it (the fragment asked for a page that is not there), else null. */
function pageInRange(page: FolderPage): number | null {
  const { folders, total, page: number, limit } = page.body
  const last = Math.max(1, Math.ceil(total / limit))
  return folders.length === 0 && number > last ? last : null
}

function listView(view: ViewState, signal: AbortSignal): Promise<FolderPage> {
  return client.listFolders(
    { folderId: view.trail.at(-1) ?? null, page: view.page, limit: view.limit, cursor: view.cursor },
    { signal },
  )
}

/** Follows the shown page's changes while the tab is visible; each change lists the page again in place. */
function goLive(view: ViewState, page: FolderPage): void {
  endLive()
  if (page.changesCursor === null || document.visibilityState === 'hidden') return
  stopLive = followChanges(client, view.trail.at(-1) ?? null, page.changesCursor, {
    changed: async (signal) => {
      const fresh = await listView(view, signal)
      if (pageInRange(fresh) === null) renderPage(view, fresh)
      else void render() // the page emptied past the end: land on the last one
    },
    failed: () => void render(), // shows the state (gone, signed out, frozen)
  })
}

async function render(): Promise<void> {
  inFlight?.abort()
  endLive()
  if (readSessionId() === null) {
    showSignIn(null)
    return
  }
  const view = parseViewState(location.hash)
  ui.signIn.hidden = true
  ui.browser.hidden = false
  ui.signOut.hidden = false
  renderBreadcrumbs(view.trail)
  const controller = new AbortController()
  inFlight = controller
  ui.browser.setAttribute('aria-busy', 'true')
  try {
    const page = await listView(view, controller.signal)
    const last = pageInRange(page)
    if (last !== null) {
      // Beyond the last page: show the last one instead (the same history entry).
      history.replaceState(null, '', viewHash({ trail: view.trail, page: last, limit: page.body.limit }))
      void render()
      return
    }
    renderPage(view, page)
    renderBreadcrumbs(view.trail)
    goLive(view, page)
    if (view.trail.some((id) => folderName(id) === undefined)) {
      if (await lookUpNames(client, view.trail, controller.signal)) renderBreadcrumbs(view.trail)
    }
  } catch (error) {
    if (controller.signal.aborted) return // a newer render took over
    renderError(error)
  } finally {
    if (inFlight === controller) {
      inFlight = null
      ui.browser.setAttribute('aria-busy', 'false')
    }
  }
}

/** A new history entry (so the back button returns here), then the render. */
function navigate(state: ViewState): void {
  const hash = viewHash(state)
  if (location.hash !== hash) history.pushState(null, '', hash)
  void render()
}

ui.signInForm.addEventListener('submit', (event) => {
  event.preventDefault()
  const id = ui.sessionInput.value.trim()
  ui.signInError.hidden = isSessionId(id)
  if (!isSessionId(id)) {
    ui.signInError.textContent = 'A session id is a UUID, like de000000-0000-4000-8000-00000000c00c.'
    return
  }
  setSessionId(id)
  ui.sessionInput.value = ''
  navigate({ trail: [] })
})

ui.signOut.addEventListener('click', () => {
  clearSessionId()
  history.replaceState(null, '', location.pathname)
  void render()
})

ui.retry.addEventListener('click', () => void render())
ui.toRoot.addEventListener('click', (event) => {
  event.preventDefault()
  navigate({ trail: [] })
})
ui.limit.addEventListener('change', () => {
  navigate({ trail: parseViewState(location.hash).trail, limit: Number(ui.limit.value) })
})
// Clicks on the page's #links and the back and forward buttons.
window.addEventListener('popstate', () => void render())
// No held request while nobody looks; on return, the page is listed again and followed anew.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'hidden') endLive()
  else if (!ui.browser.hidden && stopLive === null) void render()
})

void render()
