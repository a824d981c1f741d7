import assert from 'node:assert/strict'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import type { Store } from '../../src/store/store.js'
import { allBackends } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * An event stream whose client leaves while the stream's first read is still running (a
 * page reload, a phone losing its network, a proxy that cuts early) frees its held-request
 * place at once (docs/api.md "Push"). The first read is held open by the test until the
 * server has seen the socket close, so the close lands inside it on every backend (on
 * PostgreSQL it can by itself; SQLite's read ends in the same turn). With one place per
 * session, a leaked place would answer the session's next stream 429.
 */

const OWNER = uuid('7e500000', 1)
const SESSION = uuid('7e500000', 2)
const ROOT = uuid('7e500000', 3)

/** The store, with the next read of `method` held until the test lets it go. */
function gatedReads(store: Store, method: 'readTree' | 'readChanges') {
  let gate: { entered: () => void; release: Promise<void> } | null = null
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      const bound = (value as (...a: unknown[]) => Promise<unknown>).bind(target)
      if (prop !== method) return bound
      return async (...args: unknown[]) => {
        const held = gate
        gate = null
        if (held !== null) {
          held.entered()
          await held.release
        }
        return bound(...args)
      }
    },
  })
  /** Arms the gate: resolves when the next read is entered, with the function that lets it go. */
  const arm = () =>
    new Promise<() => void>((entered) => {
      let release = () => {}
      const released = new Promise<void>((resolve) => (release = resolve))
      gate = { entered: () => entered(release), release: released }
    })
  return { store: wrapped, arm }
}

const FEEDS = [
  { name: 'tree', path: `/v1/folders/tree?root=${ROOT}`, method: 'readTree' },
  { name: 'changes', path: `/v1/folders/changes?folder_id=${ROOT}`, method: 'readChanges' },
] as const

for (const backend of allBackends()) {
  for (const feed of FEEDS) {
    describe(
      `${backend.name}: a ${feed.name} stream left during its first read`,
      { skip: backend.skip },
      () => {
        let opened: Awaited<ReturnType<typeof backend.open>>
        let app: FastifyInstance
        let port = 0
        let arm: () => Promise<() => void>
        const responses: ServerResponse[] = []

        before(async () => {
          opened = await backend.open()
          await seedOwner(opened.store, {
            owner: OWNER,
            username: 'leaver',
            sessions: [SESSION],
            folders: [{ id: ROOT, name: 'root' }],
          })
          const gated = gatedReads(opened.store, feed.method)
          arm = gated.arm
          app = await appOver(gated.store, { longPollMaxPerSession: 1 })
          app.server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
            responses.push(res)
          })
          const base = await app.listen({ host: '127.0.0.1', port: 0 })
          port = Number(new URL(base).port)
        })
        after(async () => {
          await app?.close()
          await opened?.cleanup()
        })

        /** Raw request bytes for a stream of the feed. */
        const request =
          `GET ${feed.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
          `Accept: text/event-stream\r\nCookie: session_id=${SESSION}\r\n\r\n`

        /** The status line of a fresh stream of the same session, then closes it. */
        async function nextStreamStatus(): Promise<string> {
          const socket = connect(port, '127.0.0.1')
          socket.on('error', () => undefined)
          socket.write(request)
          let text = ''
          for await (const chunk of socket) {
            text += String(chunk)
            if (text.includes('\r\n')) break
          }
          socket.destroy()
          return text.slice(0, text.indexOf('\r\n'))
        }

        it('frees its place at once, so the session can open its next stream', async () => {
          const entered = arm()
          const socket = connect(port, '127.0.0.1')
          socket.on('error', () => undefined)
          socket.write(request)
          const release = await entered
          const leaving = responses.at(-1)
          assert.ok(leaving !== undefined, 'the server received the stream')
          const closed = new Promise<void>((resolve) => leaving.once('close', () => resolve()))
          socket.destroy()
          // The server sees the close while the first read is still running.
          await closed
          release()
          // The first read ends, and the stream must not start on the closed response.
          for (let waited = 0; waited < 40 && !leaving.writableEnded && !leaving.destroyed; waited++) {
            await new Promise((resolve) => setTimeout(resolve, 25))
          }
          let status = ''
          for (let tries = 0; tries < 40; tries++) {
            status = await nextStreamStatus()
            if (!status.includes(' 429 ')) break
            await new Promise((resolve) => setTimeout(resolve, 25))
          }
          assert.equal(status, 'HTTP/1.1 200 OK', 'the left stream still holds its place')
        })
      },
    )
  }
}
