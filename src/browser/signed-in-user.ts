import { readSessionId } from './session-cookie.js'

/**
 * Who is signed in, for the header. The service names the session's user only as the owner
 * of listed folders, so the name is remembered (in sessionStorage) from the last listing
 * that had one: the header keeps it over a reload, while a page loads, and in states that
 * list nothing (an empty folder, a frozen account). It is filed under a digest of the
 * session id, never the id itself, so another session (signed in from another tab) does
 * not inherit the name.
 *
 * A name learned is also told to the other windows of this browser (a BroadcastChannel,
 * same origin), under the same digest: a window whose cookie was changed by a sign-in
 * elsewhere can say who is signed in now without listing anything itself.
 */

const KEY = 'signed-in-user'
const CHANNEL = 'folder-browser-user'
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL) : null

/** FNV-1a: enough to tell sessions apart, and reveals next to nothing of the id. */
function digest(sessionId: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < sessionId.length; i++) {
    hash = Math.imul(hash ^ sessionId.charCodeAt(i), 0x01000193) >>> 0
  }
  return hash.toString(16)
}

function store(session: string, username: string): void {
  try {
    sessionStorage.setItem(KEY, JSON.stringify([session, username]))
  } catch {
    // storage disabled or full: the header names the user once a listing shows folders
  }
}

export function rememberUser(sessionId: string, username: string): void {
  if (signedInUser(sessionId) === username) return // known, and told already
  store(digest(sessionId), username)
  channel?.postMessage([digest(sessionId), username])
}

/**
 * Calls `listener` when another window learned the name of the session this browser is
 * signed in with now (the cookie's); signedInUser() then returns it.
 */
export function onUserNamed(listener: () => void): void {
  channel?.addEventListener('message', (event) => {
    const data = (event as Event & { data: unknown }).data
    if (!Array.isArray(data)) return
    const [session, username] = data as unknown[]
    const now = readSessionId()
    if (now === null || session !== digest(now) || typeof username !== 'string') return
    store(session, username)
    listener()
  })
}

/** The username remembered for this session, or null. */
export function signedInUser(sessionId: string): string | null {
  try {
    const stored: unknown = JSON.parse(sessionStorage.getItem(KEY) ?? 'null')
    if (!Array.isArray(stored) || stored[0] !== digest(sessionId)) return null
    return typeof stored[1] === 'string' ? stored[1] : null
  } catch {
    return null
  }
}

export function forgetUser(): void {
  try {
    sessionStorage.removeItem(KEY)
  } catch {
    // storage disabled: nothing was kept
  }
}
