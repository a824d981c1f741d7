/**
 * The `session_id` cookie of this origin, set by pasting a session id. SameSite=Strict: no
 * other site can make the browser send it; Secure whenever the page itself is on HTTPS.
 * It cannot be HttpOnly, since this script sets it; the page's CSP (scripts from this
 * origin only) is what keeps other scripts away from it.
 */

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

export function isSessionId(value: string): boolean {
  return UUID.test(value)
}

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
}

export function clearSessionId(): void {
  document.cookie = `session_id=; Max-Age=0${attributes()}`
}
