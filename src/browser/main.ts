import {
  FolderServiceClient,
  FolderServiceError,
  type FolderList,
  type FolderPage,
  type FolderTree,
} from '../client/index.js'
import { describeChanges } from './change-summary.js'
import { folderName, forgetNames, lookUpNames, rememberNames } from './folder-names.js'
import { enableRowKeys, focusedRow, focusRow, renderRows } from './folder-rows.js'
import { touchesListing } from './listing-touched.js'
import { clearPager, makePager, pageCount, showPager } from './pager.js'
import {
  clearSessionId,
  isSessionId,
  onSessionChange,
  readSessionId,
  setSessionId,
} from './session-cookie.js'
import { forgetUser, onUserNamed, rememberUser, signedInUser } from './signed-in-user.js'
import { followShared, type SharedBatch } from './shared-follow.js'
import { makeTreePane } from './tree-pane.js'
import { trailOf } from './tree-rows.js'
import { orderOf, parseViewState, stateForLink, viewHash, type ViewState } from './view-state.js'

/**
 * The folder browser page: renders the listing named by the URL fragment (view-state.ts)
 * with the typed client, and the service's error states, and keeps both panes live while
 * the tab is visible on one follow of the user's tree, shared by the session's tabs
 * (shared-follow.ts): the tree pane shows it, the listing is listed again when a change
 * touches the open folder, and the breadcrumbs are the open folder's place in it. The DOM is built with createElement and
 * textContent only (the CSP enforces Trusted Types).
 *
 * A window shows one session at a time (`session`). The cookie is the whole browser's: when
 * another window signs out or signs in as someone else, this one takes down everything it
 * showed of its session and stops following it at once (leaveSession), and says what
 * happened; it shows the new session only when asked to.
 */

const client = new FolderServiceClient({
  baseUrl: location.origin,
  // A person is waiting: one retry of a 429/503, and only after a short Retry-After.
  maxRetries: 1,
  maxRetryDelayMs: 5_000,
  conditionalRequests: true,
})

/**
 * How long a listing may take before the page says it is loading: a fast answer replaces
 * the old list at once, without a flash of "Loading…".
 */
const LOADING_DELAY_MS = 250
const TITLE_SUFFIX = ' · folder-service'

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
  toolbar: element<HTMLElement>('toolbar'),
  order: element<HTMLSelectElement>('order'),
  limit: element<HTMLSelectElement>('limit'),
  total: element<HTMLElement>('total'),
  state: element<HTMLElement>('state'),
  stateText: element<HTMLElement>('state-text'),
  retry: element<HTMLButtonElement>('retry'),
  resume: element<HTMLButtonElement>('resume'),
  toRoot: element<HTMLAnchorElement>('to-root'),
  loading: element<HTMLElement>('loading'),
  columns: element<HTMLElement>('columns'),
  folders: element<HTMLUListElement>('folders'),
  announce: element<HTMLElement>('announce'),
}

const tree = makeTreePane(element('tree-pane'), element('tree'), element('tree-status'), {
  open: (trail) => navigate({ trail, ...pick(parseViewState(location.hash), 'limit', 'order') }),
})

const pagerTemplate = element<HTMLTemplateElement>('pager')
const jumpTo = (page: number) => {
  const view = parseViewState(location.hash)
  navigate({ trail: view.trail, page, ...pick(view, 'limit', 'order') })
}
const pagers = [element('pager-top'), element('pager-bottom')].map((nav) =>
  makePager(nav, pagerTemplate, jumpTo),
)

/** The properties of `view` that are set (a ViewState leaves the others out). */
function pick<K extends keyof ViewState>(view: ViewState, ...keys: K[]): Pick<ViewState, K> {
  return Object.fromEntries(
    keys.filter((key) => view[key] !== undefined).map((key) => [key, view[key]]),
  ) as Pick<ViewState, K>
}

/** the session this window shows (null: the sign-in form, or nothing yet) */
let session: string | null = null
/** the cookie names another session than `session`: the window says so, and shows nothing */
let stale = false
let inFlight: AbortController | null = null
let loadingTimer: ReturnType<typeof setTimeout> | undefined
/** the trail of the folder the list shows (null: none yet), to focus the one come from when going up */
let shownTrail: string[] | null = null
/** stops this tab's share of the tree follow; null when not following */
let stopFollow: (() => void) | null = null
/** the user's tree as of the last batch at the present; null until one came */
let heldTree: FolderTree | null = null
/** the listing kept live: its view and what it showed (null: no listing shown) */
let live: { view: ViewState; shown: FolderList } | null = null
/** changes that touch the open listing, seen in batches not yet at the present */
let touched = false
/** the listing being listed again after a change */
let relisting: AbortController | null = null
/** when the follow last failed for good (0: never), and the timer that starts it again */
let followFailedAt = 0
let followRetry: ReturnType<typeof setTimeout> | undefined
/** The pause before following again after the follow failed for good. */
const FOLLOW_RETRY_MS = 10_000

function endFollow(): void {
  clearTimeout(followRetry)
  stopFollow?.()
  stopFollow = null
  heldTree = null
  touched = false
}

function setTitle(place: string): void {
  document.title = `${place}${TITLE_SUFFIX}`
}

/** The header names the user as soon as the page knows the name (signed-in-user.ts). */
function showWho(sessionId: string): void {
  const username = signedInUser(sessionId)
  ui.who.textContent = username === null ? 'Signed in' : `Signed in as ${username}`
}

/**
 * Takes down everything shown of the session: the follow, the list, its count and pagers,
 * the breadcrumbs, the tree, the last announcement, the names remembered. Hidden is not
 * enough: the next sign-in shows the section again before its first answer.
 */
function clearSession(): void {
  inFlight?.abort()
  relisting?.abort()
  clearTimeout(loadingTimer)
  endFollow()
  tree.stop()
  live = null
  shownTrail = null
  ui.folders.replaceChildren()
  ui.columns.hidden = true
  for (const pager of pagers) clearPager(pager)
  ui.total.textContent = ''
  ui.announce.textContent = ''
  ui.breadcrumbs.replaceChildren()
  ui.state.hidden = true
  ui.loading.hidden = true
  forgetNames()
}

function showSignIn(reason: string | null): void {
  session = null
  stale = false
  clearSession()
  ui.browser.hidden = true
  ui.signOut.hidden = true
  ui.who.textContent = ''
  ui.signIn.hidden = false
  ui.signInReason.hidden = reason === null
  ui.signInReason.textContent = reason ?? ''
  setTitle('Sign in')
  ui.sessionInput.focus()
}

/** What a window left by its session says: who is signed in now, where known. */
function staleText(now: string): string {
  const username = signedInUser(now)
  return (
    (username === null
      ? 'Another session was signed in, in another window.'
      : `Now signed in as ${username}, in another window.`) +
    " This window no longer shows the previous session's folders."
  )
}

/**
 * The cookie no longer names the session this window shows: signed out in another window,
 * or signed in there as someone (or with some session) else. Nothing of the old session
 * stays, is asked for or is followed; a sign-out shows the sign-in form, another session a
 * state that says who is signed in now, with a button to show that session's folders.
 */
function leaveSession(now: string | null): void {
  followFailedAt = 0 // the next session's follow owes nothing to this one's failures
  if (now === null) {
    forgetUser()
    showSignIn('Signed out in another window.')
    return
  }
  const first = !stale
  stale = true
  clearSession()
  ui.signIn.hidden = true
  ui.browser.hidden = false
  ui.signOut.hidden = false
  showWho(now)
  setTitle('Signed in elsewhere')
  showState(staleText(now), { resume: true })
  if (first) ui.resume.focus()
}

/** Whether the cookie still names the session shown; if not, a render says what changed. */
function stillSignedIn(): boolean {
  if (readSessionId() === session) return true
  void render()
  return false
}

function hideListing(): void {
  ui.folders.replaceChildren()
  ui.columns.hidden = true
  for (const pager of pagers) pager.nav.hidden = true
}

/** Shows "Loading…" in place of the list (for an answer slower than LOADING_DELAY_MS). */
function showLoading(): void {
  hideListing()
  ui.state.hidden = true
  ui.loading.hidden = false
}

/** Whether the focus is nowhere useful: on the body, or on something hidden or removed. */
function focusLost(): boolean {
  const active = document.activeElement
  return (
    active === null || active === document.body || !active.isConnected || active.closest('[hidden]') !== null
  )
}

/**
 * A problem state in place of the listing (its controls hidden too); `retry` offers "Try
 * again", `root` a way out. The focus goes to that action when it had nowhere to be.
 */
function showState(text: string, options: { retry?: boolean; root?: boolean; resume?: boolean } = {}): void {
  const lost = focusLost() || focusedRow(ui.folders) !== null
  ui.state.hidden = false
  ui.stateText.textContent = text
  ui.retry.hidden = options.retry !== true
  ui.toRoot.hidden = options.root !== true
  ui.resume.hidden = options.resume !== true
  ui.loading.hidden = true
  ui.toolbar.hidden = true
  ui.total.textContent = ''
  hideListing()
  if (lost) (options.retry === true ? ui.retry : options.root === true ? ui.toRoot : ui.state).focus()
}

/** What the last crumb says instead of a folder's name. */
type Missing = 'Folder not found' | 'Broken link'

/**
 * The breadcrumbs and the title. A name not known yet reads "…" until lookUpNames finds it
 * in the parent's listing (`settled`: looked up and not found, "Unknown folder").
 */
function renderPlace(trail: string[], options: { missing?: Missing; settled?: boolean } = {}): void {
  const unknown = options.settled === true ? 'Unknown folder' : '…'
  const items = [{ label: 'Home', state: { trail: [] } as ViewState }]
  const order = pick(parseViewState(location.hash), 'order')
  const named = options.missing === undefined ? trail : trail.slice(0, -1)
  named.forEach((id, i) =>
    items.push({ label: folderName(id) ?? unknown, state: { trail: trail.slice(0, i + 1), ...order } }),
  )
  if (options.missing !== undefined) items.push({ label: options.missing, state: { trail } })
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
        a.href = viewHash({ ...item.state, ...order })
        a.textContent = item.label
        li.append(a)
      }
      return li
    }),
  )
  const here = items.at(-1)?.label ?? 'Home'
  setTitle(here === '…' ? 'Folders' : here)
}

/** Shows `page` of `view`; `relisted`: the same view listed again after a live change. */
function renderPage(view: ViewState, page: FolderPage, relisted = false): void {
  const { folders, total, limit } = page.body
  rememberNames(folders)
  const sessionId = readSessionId()
  if (folders[0] !== undefined && sessionId !== null) {
    rememberUser(sessionId, folders[0].owner.username)
    showWho(sessionId)
  }
  ui.state.hidden = true
  ui.loading.hidden = true
  ui.toolbar.hidden = false
  ui.columns.hidden = folders.length === 0
  const rowState = pick(view, 'limit', 'order')
  renderRows(
    ui.folders,
    folders,
    (folder) => viewHash({ trail: [...view.trail, folder.id], ...rowState }),
    total === 0 ? 'No folders here.' : 'No folders on this page.',
  )
  for (const pager of pagers) showPager(pager, page, (href) => viewHash(stateForLink(view, href)), relisted)
  ui.total.textContent = `${total} ${total === 1 ? 'folder' : 'folders'}`
  ui.limit.value = String(limit)
  ui.order.value = orderOf(view)
}

function renderError(error: unknown, view: ViewState): void {
  if (!(error instanceof FolderServiceError)) {
    showState(`Something went wrong in this page: ${String(error)}`, { retry: true })
    return
  }
  switch (error.code) {
    case 'UNAUTHORIZED':
      forgetUser()
      showSignIn('Your session is missing, invalid or expired. Sign in again.')
      return
    case 'FROZEN_ACCOUNT':
      showState('This account is frozen: its folders cannot be listed. Contact your administrator.', {
        retry: true,
      })
      return
    case 'NOT_FOUND':
      renderPlace(view.trail, { missing: 'Folder not found' })
      showState('This folder was not found: it was deleted or moved, or it is not yours.', { root: true })
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
  const last = pageCount(page)
  return page.body.folders.length === 0 && page.body.page > last ? last : null
}

function listView(view: ViewState, signal: AbortSignal): Promise<FolderPage> {
  return client.listFolders(
    {
      folderId: view.trail.at(-1) ?? null,
      page: view.page,
      limit: view.limit,
      cursor: view.cursor,
      order: orderOf(view),
    },
    { signal },
  )
}

/** Lists the open page again in place, and announces politely what changed on it (#announce). */
async function relist(): Promise<void> {
  const current = live
  if (current === null) return
  const { view } = current
  relisting?.abort()
  const controller = new AbortController()
  relisting = controller
  try {
    const fresh = await listView(view, controller.signal)
    if (controller.signal.aborted || live !== current || !stillSignedIn()) return
    if (pageInRange(fresh) !== null) {
      void render() // the page emptied past the end: land on the last one
      return
    }
    renderPage(view, fresh, true)
    const summary = describeChanges(current.shown, fresh.body)
    current.shown = fresh.body
    if (summary !== null) ui.announce.textContent = summary
  } catch {
    if (!controller.signal.aborted) void render() // shows the state (gone, signed out, frozen)
  } finally {
    if (relisting === controller) relisting = null
  }
}

/**
 * The breadcrumbs (and the URL's trail) from the open folder's place in the tree, as the
 * service says it is now: a folder moved elsewhere, or a hand-made link naming it under
 * another parent, shows where it is. The page, limit, order and cursor stay.
 */
function placeFromTree(held: FolderTree): void {
  if (live === null) return
  const open = live.view.trail.at(-1)
  const trail = open === undefined ? [] : trailOf(held, open)
  if (trail === null) return // not in the tree (yet): the listing says what it is
  rememberNames(trail.map((id) => held.get(id)).filter((folder) => folder !== undefined))
  if (trail.join('/') !== live.view.trail.join('/')) {
    const view = { ...parseViewState(location.hash), trail }
    history.replaceState(null, '', viewHash(view))
    live.view = view
    shownTrail = trail
  }
  renderPlace(trail, { settled: true })
  tree.show(trail, orderOf(live.view))
}

/** A batch of the shared tree follow: the tree pane, the breadcrumbs, the listing. */
function onTreeBatch(batch: SharedBatch): void {
  const open = live?.view.trail.at(-1) ?? null
  // A new tree (a download) may hold what changed before it: the listing is asked again.
  touched ||= batch.restarted || touchesListing(batch.changes, open)
  if (!batch.atPresent) return
  const wasIn = heldTree !== null && open !== null && heldTree.get(open) !== undefined
  heldTree = batch.tree
  tree.update(batch.tree)
  placeFromTree(batch.tree)
  // The open folder left the tree with an ancestor (no entry of its own): its listing is 404.
  const left = wasIn && open !== null && batch.tree.get(open) === undefined
  if (touched || left) {
    touched = false
    void relist()
  }
}

/** Joins the session's tree follow, unless following already or nobody looks. */
function startFollow(sessionId: string): void {
  if (stopFollow !== null || document.visibilityState === 'hidden') return
  // After a failure the listing may well succeed (a problem of the tree feed alone): the
  // follow starts again only after a pause, never in a loop with the render.
  const wait = followFailedAt + FOLLOW_RETRY_MS - Date.now()
  if (wait > 0) {
    clearTimeout(followRetry)
    followRetry = setTimeout(() => live !== null && startFollow(sessionId), wait)
    return
  }
  tree.waiting(true)
  stopFollow = followShared(client, sessionId, readSessionId, {
    batch: onTreeBatch,
    left: () => {
      stopFollow = null
      void render() // says what changed
    },
    failed: () => {
      stopFollow = null
      heldTree = null
      followFailedAt = Date.now()
      tree.waiting(false)
      void render() // the listing says why (signed out, frozen)
    },
  })
}

/**
 * After a page is shown: opening a folder puts the focus on its first row, going up on the
 * folder come from; otherwise the focus stays where the reader left it, unless it was lost.
 */
function placeFocus(trail: string[], cameFrom: string[] | null): void {
  const sameFolder = cameFrom !== null && cameFrom.join('/') === trail.join('/')
  if (sameFolder && !focusLost()) return
  const wentUp =
    cameFrom !== null && cameFrom.length > trail.length && trail.every((id, i) => cameFrom[i] === id)
  focusRow(ui.folders, wentUp ? (cameFrom[trail.length] ?? null) : null)
}

async function render(): Promise<void> {
  inFlight?.abort()
  relisting?.abort()
  clearTimeout(loadingTimer)
  live = null
  const sessionId = readSessionId()
  if (session !== null && sessionId !== session) {
    leaveSession(sessionId)
    return
  }
  if (sessionId === null) {
    showSignIn(null)
    return
  }
  session = sessionId
  stale = false
  const view = parseViewState(location.hash)
  const cameFrom = shownTrail
  ui.signIn.hidden = true
  ui.browser.hidden = false
  ui.signOut.hidden = false
  showWho(sessionId)
  if (view.broken === true) {
    shownTrail = null
    renderPlace([], { missing: 'Broken link' })
    showState('This link is broken: it does not name a folder. Check where it came from.', { root: true })
    return
  }
  renderPlace(view.trail)
  tree.show(view.trail, orderOf(view))
  const controller = new AbortController()
  inFlight = controller
  ui.folders.setAttribute('aria-busy', 'true')
  loadingTimer = setTimeout(showLoading, LOADING_DELAY_MS)
  try {
    const page = await listView(view, controller.signal)
    if (!stillSignedIn()) return // an answer for the session that left: not shown
    const last = pageInRange(page)
    if (last !== null) {
      // Beyond the last page: show the last one instead (the same history entry).
      history.replaceState(
        null,
        '',
        viewHash({ trail: view.trail, page: last, limit: page.body.limit, ...pick(view, 'order') }),
      )
      void render()
      return
    }
    clearTimeout(loadingTimer)
    renderPage(view, page)
    shownTrail = view.trail
    placeFocus(view.trail, cameFrom)
    live = { view, shown: page.body }
    startFollow(sessionId)
    if (heldTree !== null) {
      placeFromTree(heldTree)
      return
    }
    if (view.trail.some((id) => folderName(id) === undefined)) {
      await lookUpNames(client, view.trail, controller.signal)
      // Unless the tree came meanwhile: it says where the folder is (placeFromTree).
      if (!controller.signal.aborted && heldTree === null) renderPlace(view.trail, { settled: true })
    }
  } catch (error) {
    if (controller.signal.aborted || !stillSignedIn()) return // a newer render took over
    clearTimeout(loadingTimer)
    shownTrail = null
    renderError(error, view)
    // The tree pane stays useful beside a folder that is gone: a way to another one.
    if (error instanceof FolderServiceError && error.code === 'NOT_FOUND') startFollow(sessionId)
    if (error instanceof FolderServiceError && error.code === 'NOT_FOUND' && view.trail.length > 1) {
      // The ancestors may well exist: their names, as for any trail.
      await lookUpNames(client, view.trail.slice(0, -1), controller.signal)
      if (!controller.signal.aborted) renderPlace(view.trail, { missing: 'Folder not found', settled: true })
    }
  } finally {
    if (inFlight === controller) {
      inFlight = null
      ui.folders.setAttribute('aria-busy', 'false')
    }
  }
}

/** A new history entry (so the back button returns here), then the render. */
function navigate(state: ViewState): void {
  const hash = viewHash(state)
  if (location.hash !== hash) history.pushState(null, '', hash)
  void render()
}

enableRowKeys(ui.folders)

ui.signInForm.addEventListener('submit', (event) => {
  event.preventDefault()
  const id = ui.sessionInput.value.trim()
  ui.signInError.hidden = isSessionId(id)
  if (!isSessionId(id)) {
    ui.signInError.textContent = 'A session id is a UUID, like de000000-0000-4000-8000-00000000c00c.'
    return
  }
  forgetUser()
  setSessionId(id)
  session = readSessionId()
  ui.sessionInput.value = ''
  navigate({ trail: [] })
})

ui.signOut.addEventListener('click', () => {
  clearSessionId()
  forgetUser()
  session = null
  history.replaceState(null, '', location.pathname)
  void render()
})

// The session this window was left by is shown when the reader asks, from the root.
ui.resume.addEventListener('click', () => {
  session = readSessionId()
  navigate({ trail: [] })
})

// Another window signed in or out: this one leaves its session at once if it was that.
onSessionChange(() => {
  if (session !== null && (stale || readSessionId() !== session)) void render()
})
// Another window learned who is signed in now: the header (and a left window) say it.
onUserNamed(() => {
  const now = readSessionId()
  if (now === null || session === null) return
  if (stale) {
    showWho(now)
    ui.stateText.textContent = staleText(now)
  } else if (now === session) showWho(now)
})

ui.retry.addEventListener('click', () => void render())
ui.toRoot.addEventListener('click', (event) => {
  event.preventDefault()
  navigate({ trail: [], ...pick(parseViewState(location.hash), 'order') })
})
ui.limit.addEventListener('change', () => {
  const view = parseViewState(location.hash)
  navigate({ trail: view.trail, limit: Number(ui.limit.value), ...pick(view, 'order') })
})
// A cursor is made for one order (the service refuses it with the other): page 1 of the new order.
ui.order.addEventListener('change', () => {
  const view = parseViewState(location.hash)
  const order = ui.order.value === 'name' ? 'name' : 'name_natural'
  navigate({ trail: view.trail, ...pick(view, 'limit'), order })
})
// Clicks on the page's #links and the back and forward buttons.
window.addEventListener('popstate', () => void render())
// No held request while nobody looks; on return, the page is listed again and followed anew.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'hidden') endFollow()
  else if (!ui.browser.hidden && stopFollow === null) void render()
})

void render()
