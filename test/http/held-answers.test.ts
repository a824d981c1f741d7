import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { beginDraining } from '../../src/http/plugins/drain.js'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { allBackends } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * A held long-poll woken by a commit is answered with a prepared body written without
 * Fastify's send (src/http/feeds/prepared-answer.ts): its status, headers (but its own
 * request id and the date) and body are those of the same request answered at once through
 * Fastify's send, and it is logged and counted like any request. Counted, not timed.
 */

const OWNER = uuid('7fd00000', 1)
const SESSION = uuid('7fd00000', 2)
const ROOT = uuid('7fd00000', 3)
const CHILD = uuid('7fd00000', 4)
const ORIGIN = 'https://app.example'
const PATH = '/v1/folders/tree'
const HEADERS = { cookie: `session_id=${SESSION}`, origin: ORIGIN }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The headers of an answer but those that differ between any two requests. */
function sameForAnyRequest(res: LightMyRequestResponse): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...res.headers }
  delete rest['x-request-id']
  delete rest.date
  // The rate limit's count and window move from one request to the next; their presence is checked.
  delete rest['ratelimit-remaining']
  delete rest['ratelimit-reset']
  return rest
}

interface Line {
  msg?: string
  request_id?: string
  route?: string
  status?: number
}

for (const backend of allBackends()) {
  describe(`${backend.name}: a woken long-poll's answer`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let sql: RawSql
    let app: FastifyInstance
    const chunks: string[] = []
    const lines = () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Line)
    let renames = 0

    before(async () => {
      opened = await backend.open()
      await seedOwner(opened.store, {
        owner: OWNER,
        username: 'woken',
        sessions: [SESSION],
        folders: [
          { id: ROOT, name: 'root' },
          { id: CHILD, name: 'child', folder_id: ROOT },
        ],
      })
      sql = await openRawSql(opened.url)
      const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
          chunks.push(chunk.toString('utf8'))
          done()
        },
      })
      app = await appOver(
        opened.store,
        { corsOrigins: [ORIGIN], logLevel: 'info', longPollIntervalMs: 100, rateLimitPerMinute: 1000 },
        { level: 'info', stream },
      )
    })
    after(async () => {
      await sql?.close()
      await app?.close()
      await opened?.cleanup()
    })

    const tree = (query: string) => app.inject({ url: `${PATH}?root=${ROOT}&${query}`, headers: HEADERS })
    async function cursorNow(): Promise<string> {
      let cursor: string | null = null
      for (;;) {
        const res = await tree(cursor === null ? '' : `cursor=${cursor}`)
        const body = JSON.parse(res.payload) as { cursor: string; has_more: boolean }
        cursor = body.cursor
        if (!body.has_more) return cursor
      }
    }
    /** A request held at `cursor`, woken by a rename committed by another connection. */
    async function woken(cursor: string): Promise<LightMyRequestResponse> {
      const held = tree(`cursor=${cursor}&wait=30`)
      await sleep(300)
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', `renamed ${++renames}`, CHILD)
      return held
    }
    const treeCount = async (status: string) => {
      const text = (await app.inject({ url: '/metrics' })).payload
      const line = text
        .split('\n')
        .find(
          (l) =>
            l.startsWith('http_request_duration_seconds_count{') &&
            l.includes(`route="${PATH}"`) &&
            l.includes(`status="${status}"`),
        )
      return line === undefined ? 0 : Number(line.split(' ').pop())
    }

    it('has the status, headers and body of the same request answered at once', async () => {
      const cursor = await cursorNow()
      const countBefore = await treeCount('200')
      const answer = await woken(cursor)
      // The same request once more, from the same cursor, answered at once (Fastify's send).
      const atOnce = await tree(`cursor=${cursor}&wait=0`)

      assert.equal(answer.statusCode, 200, answer.payload)
      assert.equal(atOnce.statusCode, 200, atOnce.payload)
      assert.deepEqual(sameForAnyRequest(answer), sameForAnyRequest(atOnce))
      assert.equal(answer.headers['access-control-allow-origin'], ORIGIN, 'CORS, as configured')
      assert.equal(answer.headers['x-content-type-options'], 'nosniff', 'the security headers')
      assert.equal(answer.headers['ratelimit-limit'], '1000', 'the rate limit, as configured')
      assert.match(String(answer.headers['ratelimit-remaining']), /^\d+$/)
      assert.equal(answer.headers['content-length'], String(answer.rawPayload.length))
      assert.match(String(answer.headers['x-request-id']), /\S/)
      assert.notEqual(answer.headers['x-request-id'], atOnce.headers['x-request-id'])
      // The same bytes but the next cursor, sealed afresh for each answer (the same length).
      const body = JSON.parse(answer.payload) as { changes: { type: string }[]; cursor: string }
      const bodyAtOnce = JSON.parse(atOnce.payload) as { cursor: string }
      assert.equal(body.cursor.length, bodyAtOnce.cursor.length)
      assert.equal(answer.payload.replace(body.cursor, ''), atOnce.payload.replace(bodyAtOnce.cursor, ''))
      assert.equal(body.changes.length, 1, 'the rename is in the answer')

      // Its log line, with its request id, and its metrics.
      const logged = lines().filter(
        (l) => l.msg === 'request' && l.request_id === answer.headers['x-request-id'],
      )
      assert.equal(logged.length, 1, chunks.join(''))
      assert.equal(logged[0]?.status, 200)
      assert.equal(logged[0]?.route, PATH)
      assert.equal(await treeCount('200'), countBefore + 2, 'the woken answer and the one at once')
    })

    it('says Connection: close when woken while the service drains', async () => {
      const cursor = await cursorNow()
      const held = tree(`cursor=${cursor}&wait=30`)
      await sleep(300)
      beginDraining(app)
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', `renamed ${++renames}`, CHILD)
      const answer = await held
      assert.equal(answer.statusCode, 200, answer.payload)
      assert.equal(answer.headers.connection, 'close')
    })
  })
}
