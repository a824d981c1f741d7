/**
 * The `session_id` cookie of this origin, set by pasting a session id. SameSite=Strict: no
 * other site can make the browser send it; Secure whenever the page itself is on HTTPS.
 * It cannot be HttpOnly, since this script sets it; the page's CSP (scripts from this
 * origin only) is what keeps other scripts away from it.
 *
 * The cookie is one for every window of the browser profile, so a sign-in or sign-out in
 * one window changes it under all the others. Each change is said at once on a
 * BroadcastChannel (same origin only), and every window compares the cookie with the
 * session it shows (onSessionChange).
 */

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

export function isSessionId(value: string): boolean {
  return UUID.test(value)
}

const CHANNEL = 'folder-browser-session'
/** One channel per window; none where the browser has no BroadcastChannel. */
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL) : null

function attributes(): string {
  return `; Path=/; SameSite=Strict${location.protocol === 'https:' ? '; Secure' : ''}`
}

export function readSessionId(): string | null {
  for (const part of document.cookie.split(';')) {
    const [name, ...value] = part.trim().split('=')
    if (name === 'session_id') return value.join('=')
  }
  return null
}

export function setSessionId(id: string): void {
  document.cookie = `session_id=${id.toLowerCase()}${attributes()}`
  channel?.postMessage('changed')
}

export function clearSessionId(): void {
  document.cookie = `session_id=; Max-Age=0${attributes()}`
  channel?.postMessage('changed')
}

/**
 * Calls `listener` when another window of this browser signed in or out. The message says
 * nothing of the session: the listener reads the cookie itself.
 */
export function onSessionChange(listener: () => void): void {
  channel?.addEventListener('message', listener)
}
