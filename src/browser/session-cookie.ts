/**
 * The `session_id` cookie of this origin, set by pasting a session id. SameSite=Strict: no
 * other site can make the browser send it; Secure whenever the page itself is on HTTPS.
 * It cannot be HttpOnly, since this script sets it; the page's CSP (scripts from this
 * origin only) is what keeps other scripts away from it.
 *
 * The cookie is one for every window of the browser profile, so a sign-in or sign-out in
 * one window changes it under all the others. Each write is announced at once, with the
 * session it sets (null: signed out), on a BroadcastChannel (same origin only, which can
 * read the cookie anyway); every window then compares it with the session it shows
 * (onSessionChange).
 *
 * The announcement can come before the write reaches this window: for a moment (in
 * Chromium, tens of milliseconds on a loaded machine) a read here still returns the old
 * value. So readSessionId returns the session announced until the cookie reads something
 * else than it read when the announcement came: by then the browser's cookie store has
 * caught up, and is read again.
 */

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

export function isSessionId(value: string): boolean {
  return UUID.test(value)
}

/**
 * What this module needs of the page, typed here: it is also compiled for its Node test
 * (test/unit/session-cookie.test.ts), without the DOM's types.
 */
const page = globalThis as unknown as { document: { cookie: string }; location: { protocol: string } }

const CHANNEL = 'folder-browser-session'
/** One channel per window; none where the browser has no BroadcastChannel. */
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL) : null

/** Another window's write, announced, and what the cookie read here when it came. */
let announced: { session: string | null; before: string | null } | null = null

function attributes(): string {
  return `; Path=/; SameSite=Strict${page.location.protocol === 'https:' ? '; Secure' : ''}`
}

function cookieValue(): string | null {
  for (const part of page.document.cookie.split(';')) {
    const [name, ...value] = part.trim().split('=')
    if (name === 'session_id') return value.join('=')
  }
  return null
}

/** The session this browser is signed in with: the cookie, or a newer write announced. */
export function readSessionId(): string | null {
  const cookie = cookieValue()
  if (announced !== null && cookie === announced.before) return announced.session
  announced = null
  return cookie
}

function write(cookie: string, session: string | null): void {
  page.document.cookie = cookie
  announced = null // this window's own write is read back at once
  channel?.postMessage({ session })
}

export function setSessionId(id: string): void {
  write(`session_id=${id.toLowerCase()}${attributes()}`, id.toLowerCase())
}

export function clearSessionId(): void {
  write(`session_id=; Max-Age=0${attributes()}`, null)
}

/** Calls `listener` when another window of this browser signed in or out (readSessionId says how). */
export function onSessionChange(listener: () => void): void {
  channel?.addEventListener('message', (event) => {
    const { session } = ((event as Event & { data: unknown }).data ?? {}) as { session?: unknown }
    if (session !== null && !(typeof session === 'string' && isSessionId(session))) return
    const before = cookieValue()
    announced = before === session ? null : { session, before }
    listener()
  })
}
