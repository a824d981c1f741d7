import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
// Types only: the module itself is imported once the page's globals are in place (before).
import type * as SessionCookie from '../../src/browser/session-cookie.js'

/**
 * The folder browser's session cookie (src/browser/session-cookie.ts) in Node, with a
 * document whose cookie changes only when the test says (as Chromium's cookie store, which
 * for a moment after another window's write still reads the old value: tens of
 * milliseconds on a loaded machine) and a BroadcastChannel that delivers when the test says. A
 * write another window announces is what the window reads until its cookie catches up; a
 * window's own write is read back at once; a message that is no session is ignored.
 */

const A = 'aaaaaaaa-0000-4000-8000-000000000001'
const B = 'bbbbbbbb-0000-4000-8000-000000000002'
const C = 'cccccccc-0000-4000-8000-000000000003'

/** The browser's cookie store as a window reads it. */
const jar = { cookie: '' }
/** The channels of the page's windows, by name: the module's own and the other windows'. */
const channels = new Map<string, FakeChannel[]>()

class FakeChannel extends EventTarget {
  constructor(readonly name: string) {
    super()
    channels.set(name, [...(channels.get(name) ?? []), this])
  }
  postMessage(data: unknown): void {
    for (const other of channels.get(this.name) ?? [])
      if (other !== this) other.dispatchEvent(Object.assign(new Event('message'), { data }))
  }
}

let cookies: typeof SessionCookie
/** Another window of the same browser, on the module's channel. */
let otherWindow: FakeChannel
let heard = 0

before(async () => {
  Object.assign(globalThis, {
    BroadcastChannel: FakeChannel,
    location: { protocol: 'http:' },
    document: {
      get cookie() {
        return jar.cookie
      },
      set cookie(value: string) {
        jar.cookie = /Max-Age=0/.test(value) ? '' : (value.split(';')[0] ?? '')
      },
    },
  })
  cookies = await import('../../src/browser/session-cookie.js')
  cookies.onSessionChange(() => heard++)
  otherWindow = new FakeChannel('folder-browser-session')
})

describe('the session cookie across windows', () => {
  it('a sign-out announced by another window is read at once, before the cookie store catches up', () => {
    jar.cookie = `session_id=${A}`
    assert.equal(cookies.readSessionId(), A)
    otherWindow.postMessage({ session: null }) // the store here still reads A
    assert.equal(heard, 1)
    assert.equal(cookies.readSessionId(), null)
    assert.equal(cookies.readSessionId(), null, 'for as long as the store lags')
    jar.cookie = '' // caught up
    assert.equal(cookies.readSessionId(), null)
  })

  it("another user's sign-in is read at once; once the store has moved, the store is read again", () => {
    otherWindow.postMessage({ session: B }) // the store still reads no session
    assert.equal(cookies.readSessionId(), B)
    jar.cookie = `session_id=${C}` // the store moved on (a later write) before its announcement came
    assert.equal(cookies.readSessionId(), C)
    otherWindow.postMessage({ session: C })
    assert.equal(cookies.readSessionId(), C)
  })

  it("a window's own writes are read back at once and announced with the session", () => {
    const sent: unknown[] = []
    otherWindow.addEventListener('message', (event) => sent.push((event as Event & { data: unknown }).data))
    cookies.setSessionId(A.toUpperCase())
    assert.equal(cookies.readSessionId(), A)
    cookies.clearSessionId()
    assert.equal(cookies.readSessionId(), null)
    assert.deepEqual(sent, [{ session: A }, { session: null }])
  })

  it('a message that names no session is ignored', () => {
    jar.cookie = `session_id=${A}`
    const before = heard
    for (const data of ['changed', { session: 'not a session' }, { session: 42 }, null])
      otherWindow.postMessage(data)
    assert.equal(heard, before)
    assert.equal(cookies.readSessionId(), A)
  })
})
