import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { validateImport } from '../../src/import/validate-import.js'
import { allBackends } from '../helpers/databases/backends.js'
import { openEventStream, type OpenedStream } from '../helpers/http/event-stream-client.js'
import { assertEndsWhenFrozenWhileIdle } from '../helpers/http/frozen-while-idle.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * GET /v1/folders/tree as Server-Sent Events (docs/api.md "Push"): the download arrives as
 * events (has_more until the present), a commit as the next one, a reconnect with
 * Last-Event-ID resumes after what it had, and a revoked session or a user frozen while the
 * stream is idle ends the stream with an error event. The stream machinery is shared with the changes feed
 * (test/http/changes-event-stream.test.ts covers heartbeats, bounds and shutdown).
 */

const OWNER = uuid('7ee00000', 1)
const SESSION = uuid('7ee00000', 2)
const ROOT = uuid('7ee00000', 3)
const CHILD = uuid('7ee00000', 4)
/** A user of its own, frozen by one test while its stream is idle. */
const FROZEN_OWNER = uuid('7ee00000', 5)
const FROZEN_SESSION = uuid('7ee00000', 6)
const FROZEN_ROOT = uuid('7ee00000', 7)
const PATH = '/v1/folders/tree'

interface TreeJson {
  changes: { type: string; folder?: { id: string }; id?: string }[]
  cursor: string
  has_more: boolean
}

for (const backend of allBackends()) {
  describe(`${backend.name}: GET /v1/folders/tree as an event stream`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let sql: RawSql
    let app: FastifyInstance
    let base = ''
    const streams: OpenedStream[] = []
    const open = async (headers: Record<string, string> = {}, session = SESSION, root = ROOT) => {
      const stream = await openEventStream(`${base}${PATH}?root=${root}&limit=1`, {
        cookie: `session_id=${session}`,
        ...headers,
      })
      streams.push(stream)
      return stream
    }
    /** Events until one says has_more: false, with the ids of the folders they upsert. */
    async function untilPresent(stream: OpenedStream) {
      const upserted: string[] = []
      for (let i = 0; i < 20; i++) {
        const event = await stream.nextEvent(5000)
        assert.equal(event.event, 'changes')
        const body = JSON.parse(event.data) as TreeJson
        assert.equal(event.id, body.cursor)
        for (const change of body.changes) if (change.folder) upserted.push(change.folder.id)
        if (!body.has_more) return { upserted, cursor: body.cursor }
      }
      throw new Error('no answer reached the present')
    }

    before(async () => {
      opened = await backend.open()
      await opened.store.importData(
        validateImport(
          {
            users: [
              { id: OWNER, username: 'tree-streamer' },
              { id: FROZEN_OWNER, username: 'frozen-later' },
            ],
            sessions: [
              { id: SESSION, user_id: OWNER },
              { id: FROZEN_SESSION, user_id: FROZEN_OWNER },
            ],
            folders: [
              { id: ROOT, name: 'root', owner_id: OWNER },
              { id: CHILD, name: 'child', owner_id: OWNER, folder_id: ROOT },
              { id: FROZEN_ROOT, name: 'followed until frozen', owner_id: FROZEN_OWNER },
            ],
          },
          Date.now(),
        ),
      )
      sql = await openRawSql(opened.url)
      app = await appOver(opened.store, { longPollIntervalMs: 100, eventStream: { heartbeatMs: 60_000 } })
      base = await app.listen({ host: '127.0.0.1', port: 0 })
    })
    after(async () => {
      for (const stream of streams) stream.close()
      await app?.close()
      await sql?.close()
      await opened?.cleanup()
    })

    it('streams the download, then a commit, and resumes after Last-Event-ID', async () => {
      const stream = await open()
      assert.equal(stream.status, 200)
      assert.equal(stream.headers['content-type'], 'text/event-stream; charset=utf-8')
      const download = await untilPresent(stream)
      assert.deepEqual(download.upserted, [CHILD])

      const added = randomUUID()
      await insertLiveFolder(sql, { id: added, name: 'added', parent: CHILD, owner: OWNER, at: Date.now() })
      const next = await stream.nextEvent(5000)
      const body = JSON.parse(next.data) as TreeJson
      assert.deepEqual(
        body.changes.map((c) => c.folder?.id),
        [added],
      )
      stream.close()

      // A reconnect after the download: nothing is sent again; the next commit comes.
      const again = await open({ 'last-event-id': download.cursor })
      const resumed = await again.nextEvent(5000)
      assert.deepEqual(
        (JSON.parse(resumed.data) as TreeJson).changes.map((c) => c.folder?.id),
        [added],
        'the commit made after the cursor it had',
      )
    })

    it('ends with a 403 error event when the user is frozen while the stream is idle, sending nothing committed after', async () => {
      const stream = await open({}, FROZEN_SESSION, FROZEN_ROOT)
      await untilPresent(stream)
      await assertEndsWhenFrozenWhileIdle(stream, sql, { owner: FROZEN_OWNER, parent: FROZEN_ROOT })
    })

    it('ends with an error event when the session is revoked', async () => {
      const stream = await open()
      await untilPresent(stream)
      await sql.run('DELETE FROM sessions WHERE id = ?', SESSION)
      await insertLiveFolder(sql, {
        id: randomUUID(),
        name: 'late',
        parent: ROOT,
        owner: OWNER,
        at: Date.now(),
      })
      const last = await stream.nextEvent(5000)
      assert.equal(last.event, 'error')
      assert.equal((JSON.parse(last.data) as { status: number }).status, 401)
      await stream.ended
    })
  })
}
