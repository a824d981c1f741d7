/**
 * Who is signed in, for the header. The service names the session's user only as the owner
 * of listed folders, so the name is remembered (in sessionStorage) from the last listing
 * that had one: the header keeps it over a reload, while a page loads, and in states that
 * list nothing (an empty folder, a frozen account). It is filed under a digest of the
 * session id, never the id itself, so another session (signed in from another tab) does
 * not inherit the name.
 */

const KEY = 'signed-in-user'

/** FNV-1a: enough to tell sessions apart, and reveals next to nothing of the id. */
function digest(sessionId: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < sessionId.length; i++) {
    hash = Math.imul(hash ^ sessionId.charCodeAt(i), 0x01000193) >>> 0
  }
  return hash.toString(16)
}

export function rememberUser(sessionId: string, username: string): void {
  try {
    sessionStorage.setItem(KEY, JSON.stringify([digest(sessionId), username]))
  } catch {
    // storage disabled or full: the header names the user once a listing shows folders
  }
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
