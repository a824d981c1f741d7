import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { allBackends } from '../helpers/databases/backends.js'
import { openEventStream, type OpenedStream } from '../helpers/http/event-stream-client.js'
import {
  changesOf,
  followedFolder,
  insertChild,
  seedFollowed,
  type ChangesJson,
} from '../helpers/fixtures/followed-folder.js'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { startService, type Service } from '../helpers/processes/cli.js'

/**
 * Wake-ups (docs/operations.md "Wake-ups"): with the poll interval at its longest (1 s), a
 * stream and a held request on one service process are woken by a commit made on another
 * connection far sooner than the poll would (PostgreSQL NOTIFY, SQLite data_version); with
 * FEED_NOTIFY=off the poll alone still delivers the change.
 */

const FOLLOWED = followedFolder('7a000000')
const headers = { cookie: `session_id=${FOLLOWED.session}` }
const POLL_MS = '1000'
/**
 * Far below the 1 s poll. Each sample waits 97 ms longer before its commit, so the eight
 * commits sweep 7 x 97 ms of the poll's cycle: the poll alone answers one of them at least
 * 679 ms late, whatever its phase (seen: 664 to 794 ms with the hints broken).
 */
const WOKEN_WITHIN_MS = 450
const SAMPLES = 8

for (const backend of allBackends()) {
  describe(`${backend.name}: commit hints wake followers of another process`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let hinted: Service
    let polling: Service
    let sql: RawSql
    let stream: OpenedStream | undefined

    const changes = (service: Service, query: string) => changesOf(FOLLOWED, service.base, query)
    const insert = (name: string) => insertChild(sql, FOLLOWED, name)

    before(async () => {
      opened = await backend.open()
      await seedFollowed(opened.store, FOLLOWED)
      ;[hinted, polling] = await Promise.all([
        startService(opened.url, { LONG_POLL_INTERVAL_MS: POLL_MS }),
        startService(opened.url, { LONG_POLL_INTERVAL_MS: POLL_MS, FEED_NOTIFY: 'off' }),
      ])
      sql = await openRawSql(opened.url)
    })
    after(async () => {
      stream?.close()
      await sql?.close()
      await Promise.all([hinted?.stop(), polling?.stop()])
      await opened?.cleanup()
    })

    it('wakes a stream and a held request within a fraction of the poll interval', async () => {
      const events = await openEventStream(
        `${hinted.base}/v1/folders/changes?folder_id=${FOLLOWED.parent}`,
        headers,
      )
      stream = events
      let cursor = (JSON.parse((await events.nextEvent(10_000)).data) as ChangesJson).cursor
      // the LISTEN connection opens with the first wait: let it settle before measuring
      await new Promise((resolve) => setTimeout(resolve, 500))
      const delays: number[] = []
      for (let i = 0; i < SAMPLES; i++) {
        const held = changes(hinted, `cursor=${cursor}&wait=20`)
        await new Promise((resolve) => setTimeout(resolve, 150 + 97 * i))
        const committed = Date.now()
        const id = await insert(`woken ${i}`)
        const event = await events.nextEvent(5000)
        const streamed = Date.now() - committed
        const answer = await held
        const answered = Date.now() - committed
        assert.deepEqual(
          (JSON.parse(event.data) as ChangesJson).changes.map((c) => c.folder?.id),
          [id],
        )
        assert.deepEqual(
          answer.changes.map((c) => c.folder?.id),
          [id],
        )
        delays.push(streamed, answered)
        cursor = answer.cursor
      }
      assert.ok(
        delays.every((ms) => ms < WOKEN_WITHIN_MS),
        `commit to receipt (ms): ${delays.join(', ')}; the poll alone takes up to ${POLL_MS}`,
      )
    })

    it('with FEED_NOTIFY=off, the poll alone still delivers the change', async () => {
      const { cursor } = await changes(polling, '')
      const held = changes(polling, `cursor=${cursor}&wait=20`)
      await new Promise((resolve) => setTimeout(resolve, 300))
      const committed = Date.now()
      const id = await insert('polled')
      const answer = await held
      assert.deepEqual(
        answer.changes.map((c) => c.folder?.id),
        [id],
      )
      assert.ok(Date.now() - committed < 3000, `answered ${Date.now() - committed} ms after the commit`)
    })
  })
}
