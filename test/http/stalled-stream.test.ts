import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { allBackends } from '../helpers/databases/backends.js'
import { seedOwner } from '../helpers/fixtures/seed-owner.js'
import { openEventStream, type OpenedStream } from '../helpers/http/event-stream-client.js'
import { uuid } from '../helpers/fixtures/ids.js'
import { openRawSql, type RawSql } from '../../harness/raw-sql.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * A stream whose client never reads holds its next read, not its frames: once its socket is
 * full (the kernel's buffers and Node's high-water mark), nothing more is written to it until
 * it drains, however many changes follow, while another stream of the same user hears every
 * one. The client downloads a tree of several megabytes without reading a byte, so its socket
 * fills; the server's socket is watched for writes made while it waits for 'drain'. Counted,
 * not timed.
 */

const OWNER = uuid('7fe00000', 1)
const SESSION = uuid('7fe00000', 2)
const ROOT = uuid('7fe00000', 3)
/** 12,000 folders of 255-character names: about 5 MB of events, more than loopback buffers hold */
const CHILDREN = 12_000
const RENAMES = 30
const childOf = (i: number) => uuid('7fe10000', i + 1)
const nameOf = (i: number, round = 0) => `${round} ${i} `.padEnd(255, 'x')

/** What the server's socket of the stalled stream was asked to write. */
interface Watched {
  socket: Socket
  /** writes that returned false (the socket full) */
  full: number
  /** writes made while an earlier one's 'drain' had not come */
  whileFull: number
  /** the most bytes Node held for the socket after a write */
  mostBuffered: number
  /** the largest single write */
  largest: number
}

function watch(socket: Socket): Watched {
  const watched: Watched = { socket, full: 0, whileFull: 0, mostBuffered: 0, largest: 0 }
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean
  socket.write = (chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (socket.writableNeedDrain) watched.whileFull++
    watched.largest = Math.max(
      watched.largest,
      typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length,
    )
    const room = write(chunk, ...rest)
    if (!room) watched.full++
    watched.mostBuffered = Math.max(watched.mostBuffered, socket.writableLength)
    return room
  }
  return watched
}

for (const backend of allBackends()) {
  describe(`${backend.name}: a stream whose client never reads`, { skip: backend.skip }, () => {
    let opened: Awaited<ReturnType<typeof backend.open>>
    let sql: RawSql
    let app: FastifyInstance
    let base = ''
    const serverSockets = new Map<number, Socket>()
    const clients: Socket[] = []
    const streams: OpenedStream[] = []

    before(async () => {
      opened = await backend.open()
      await seedOwner(opened.store, {
        owner: OWNER,
        username: 'stalled',
        sessions: [SESSION],
        folders: [
          { id: ROOT, name: 'root' },
          ...Array.from({ length: CHILDREN }, (_, i) => ({
            id: childOf(i),
            name: nameOf(i),
            folder_id: ROOT,
          })),
        ],
      })
      sql = await openRawSql(opened.url)
      app = await appOver(opened.store, { longPollIntervalMs: 100, eventStream: { heartbeatMs: 60_000 } })
      app.server.on('connection', (socket: Socket) => {
        if (socket.remotePort !== undefined) serverSockets.set(socket.remotePort, socket)
      })
      base = await app.listen({ host: '127.0.0.1', port: 0 })
    })
    after(async () => {
      for (const stream of streams) stream.close()
      for (const client of clients) client.destroy()
      await app?.close()
      await sql?.close()
      await opened?.cleanup()
    })

    it('writes nothing more to a full socket, and the other stream hears every change', async () => {
      const port = Number(new URL(base).port)
      // The stalled client: asks for the whole tree as an event stream and never reads.
      const client = connect(port, '127.0.0.1')
      clients.push(client)
      client.pause()
      await new Promise<void>((resolve) => client.once('connect', resolve))
      let watched: Watched | undefined
      for (let waited = 0; waited < 100 && watched === undefined; waited++) {
        const socket = serverSockets.get(client.localPort ?? -1)
        if (socket !== undefined) watched = watch(socket)
        else await new Promise((resolve) => setTimeout(resolve, 10))
      }
      assert.ok(watched !== undefined, 'the server side of the stalled connection')
      client.write(
        `GET /v1/folders/tree?root=${ROOT}&limit=1000 HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\ncookie: session_id=${SESSION}\r\n\r\n`,
      )
      const stalled = watched
      for (let waited = 0; waited < 600 && stalled.full === 0; waited++)
        await new Promise((resolve) => setTimeout(resolve, 50))
      assert.ok(stalled.full > 0, 'the stalled stream filled its socket')

      // The reader downloads the tree and follows it; every rename must reach it.
      const reader = await openEventStream(`${base}/v1/folders/tree?root=${ROOT}&limit=1000`, {
        cookie: `session_id=${SESSION}`,
      })
      streams.push(reader)
      for (let more = true; more;)
        more = (JSON.parse((await reader.nextEvent(20_000)).data) as { has_more: boolean }).has_more
      const writesBefore = stalled.full + stalled.whileFull
      for (let round = 1; round <= RENAMES; round++) {
        await sql.run('UPDATE folders SET name = ? WHERE id = ?', nameOf(round, round), childOf(round))
        const event = await reader.nextEvent(10_000)
        assert.ok(event.data.includes(childOf(round)), `rename ${round} heard by the reader`)
      }
      assert.equal(stalled.whileFull, 0, 'writes to the stalled socket while it waited for drain')
      assert.equal(stalled.full + stalled.whileFull, writesBefore, 'nothing written to it during the renames')
      // What Node holds for it: at most the high-water mark and the one write that crossed it.
      assert.ok(
        stalled.mostBuffered <= stalled.socket.writableHighWaterMark + stalled.largest,
        `${stalled.mostBuffered} bytes held, the largest write ${stalled.largest}`,
      )
    })
  })
}
