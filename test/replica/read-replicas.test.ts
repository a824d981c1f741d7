import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { validateImport } from '../../src/import/validate-import.js'
import { openStore } from '../../src/store/open-store.js'
import type { Store } from '../../src/store/store.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { PROJECTS, ROOT_FOLDERS, seedDocument, sessionCookieHeaders } from '../helpers/apps/operability-db.js'
import { ALICE, ALICE_SESSION } from '../helpers/fixtures/users.js'
import { appOver } from '../helpers/apps/test-app.js'
import { sleep } from '../helpers/http/load.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../../harness/raw-sql.js'
import {
  pauseReplay,
  replicaCluster,
  replicaSkip,
  replicaSuperuser,
  replicatedDatabase,
  routing,
  superuserSkip,
  waitForReplay,
  type ReplicatedDatabase,
} from '../helpers/databases/replica.js'

/**
 * Read replicas (docs/scale-out.md): listings are read on a streaming replica only when it
 * has replayed the session's generation, so its lag never shows; a replica that is paused,
 * stopped or cancels a read is skipped and the primary answers. Needs the replica that
 * .ci/postgres-replica.sh starts (TEST_DATABASE_READ_URL); the tests that pause, reconfigure
 * or stop it need root (su postgres, pg_ctlcluster).
 */

const seed = (store: Store) => store.importData(validateImport(seedDocument(), Date.now()))
const aliceRoot = (app: FastifyInstance, query = 'limit=100') =>
  app.inject({ url: `/v1/folders?${query}`, headers: sessionCookieHeaders(ALICE_SESSION) })
const replicaReads = (store: Store) => routing(store).replicas[0]?.reads ?? 0

/** The value of one series in the Prometheus text of /metrics (0 when absent). */
async function metric(app: FastifyInstance, series: string): Promise<number> {
  const text = (await app.inject({ url: '/metrics' })).body
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

describe('read replicas: a caught-up replica serves the uncached listings', { skip: replicaSkip }, () => {
  let db: ReplicatedDatabase
  let app: FastifyInstance
  before(async () => {
    db = await replicatedDatabase(seed)
    app = await appOver(db.store)
  })
  after(async () => {
    await app?.close()
    await db?.cleanup()
  })

  it('reads every uncached page on the replica and asks the primary for the session only', async () => {
    assert.equal((await aliceRoot(app, 'limit=1&page=1')).statusCode, 200) // reads the cursor key once
    const before = routing(db.store)
    const requests = []
    for (let limit = 1; limit <= 4; limit++) {
      for (let page = 1; page <= ROOT_FOLDERS; page++) requests.push(`limit=${limit}&page=${page}`)
    }
    requests.push(`folder_id=${PROJECTS}&limit=2&page=2`)
    for (const query of requests.slice(1)) {
      const res = await aliceRoot(app, query)
      assert.equal(res.statusCode, 200, query)
    }
    const now = routing(db.store)
    const n = requests.length - 1
    assert.equal(replicaReads(db.store) - (before.replicas[0]?.reads ?? 0), n, 'replica reads')
    assert.equal(now.primaryReads - before.primaryReads, 0, 'listing reads on the primary')
    // One request at a time: each session lookup is a batch of one, and nothing else.
    assert.equal(now.primaryStatements - before.primaryStatements, n, 'statements sent to the primary')
    const replica = now.replicas[0]?.name ?? ''
    assert.ok(
      (await metric(app, `db_reads_total{target="replica",replica="${replica}"}`)) >= n,
      '/metrics counts the replica reads',
    )
  })
  it('reads the change feed on the replica too, with the answer the primary gives', async () => {
    const user = await db.store.findSessionUser(ALICE_SESSION, Date.now())
    assert.ok(user !== null)
    const reference = await openStore({ ...TEST_SETTINGS, databaseUrl: db.url })
    try {
      for (const parentId of [null, PROJECTS]) {
        const start = await reference.readChanges({ ownerId: ALICE, parentId, after: null, limit: 10 })
        if (start.outcome !== 'changes') throw new Error(`no feed: ${start.outcome}`)
        const query = { ownerId: ALICE, parentId, after: start.present, limit: 10 }
        const reads = replicaReads(db.store)
        const routed = await db.store.readChanges({ ...query, minGeneration: user.generation })
        assert.equal(replicaReads(db.store), reads + 1, 'read on the replica')
        assert.deepEqual(routed, await reference.readChanges(query))
      }
    } finally {
      await reference.close()
    }
  })
})

describe(
  'read replicas: replay paused, every answer still shows every write',
  { skip: superuserSkip },
  () => {
    let db: ReplicatedDatabase
    let app: FastifyInstance
    let sql: RawSql
    before(async () => {
      db = await replicatedDatabase(seed)
      app = await appOver(db.store)
      sql = await openRawSql(db.url)
    })
    after(async () => {
      replicaSuperuser('SELECT pg_wal_replay_resume()')
      await sql?.close()
      await app?.close()
      await db?.cleanup()
    })

    it('serves from the primary while paused (0 stale), and from the replica again after resume', async () => {
      assert.equal((await aliceRoot(app)).statusCode, 200)
      assert.ok(replicaReads(db.store) > 0, 'the replica served before the pause')
      await pauseReplay()

      const before = routing(db.store)
      const written: string[] = []
      let stale = 0
      const WRITES = 40
      for (let i = 0; i < WRITES; i++) {
        const id = randomUUID()
        await insertLiveFolder(sql, { id, name: `written ${i}`, parent: null, owner: ALICE, at: Date.now() })
        written.push(id)
        const res = await aliceRoot(app)
        assert.equal(res.statusCode, 200)
        const body = JSON.parse(res.body) as { total: number; folders: { id: string }[] }
        const ids = new Set(body.folders.map((f) => f.id))
        if (body.total !== ROOT_FOLDERS + written.length || !written.every((w) => ids.has(w))) stale++
      }
      assert.equal(stale, 0, 'stale answers with replay paused')
      const during = routing(db.store)
      assert.equal(during.primaryReads - before.primaryReads, WRITES, 'every listing read on the primary')
      assert.equal(replicaReads(db.store), before.replicas[0]?.reads, 'no replica read while paused')
      const fallbacks = during.replicas[0]?.fallbacks
      assert.equal((fallbacks?.lagging ?? 0) + (fallbacks?.skipped ?? 0) - sumLagSkip(before), WRITES)
      assert.ok(
        (await metric(
          app,
          `db_replica_fallbacks_total{replica="${during.replicas[0]?.name}",reason="lagging"}`,
        )) > 0,
        '/metrics counts the lagging fallbacks',
      )

      // The change feed too: a position taken before a write, read at the session's generation.
      const position = await db.store.readChanges({ ownerId: ALICE, parentId: null, after: null, limit: 1 })
      const id = randomUUID()
      await insertLiveFolder(sql, { id, name: 'fed', parent: null, owner: ALICE, at: Date.now() })
      const user = await db.store.findSessionUser(ALICE_SESSION, Date.now())
      if (position.outcome !== 'changes' || user === null) throw new Error('no position or no session')
      const feed = await db.store.readChanges({
        ownerId: ALICE,
        parentId: null,
        after: position.present,
        limit: 10,
        minGeneration: user.generation,
      })
      assert.ok(
        feed.outcome === 'changes' && feed.rows.some((row) => row.kind === 'folder' && row.id === id),
        'the feed shows the write made while replay is paused',
      )

      replicaSuperuser('SELECT pg_wal_replay_resume()')
      await waitForReplay(db.url, db.readUrl)
      const resumed = replicaReads(db.store)
      // A replica skipped for lagging comes back after a short while, by itself.
      for (let page = 1; page <= 100 && replicaReads(db.store) === resumed; page++) {
        assert.equal((await aliceRoot(app, `limit=1&page=${page}`)).statusCode, 200)
        await sleep(100)
      }
      assert.ok(replicaReads(db.store) > resumed, 'reads went back to the replica after resume')
    })

    it('reads at least the generation that woke it: with replay paused, the primary answers', async () => {
      const changes = (query: string) =>
        app.inject({ url: `/v1/folders/changes?${query}`, headers: sessionCookieHeaders(ALICE_SESSION) })
      const { cursor } = JSON.parse((await changes('')).body) as { cursor: string }
      await pauseReplay()
      const held = changes(`cursor=${cursor}&wait=6`)
      await sleep(300)
      const id = randomUUID()
      const committed = Date.now()
      await insertLiveFolder(sql, { id, name: 'while paused', parent: null, owner: ALICE, at: Date.now() })
      const res = await held
      const answered = Date.now()
      assert.equal(res.statusCode, 200)
      const body = JSON.parse(res.body) as { changes: { type: string; folder?: { id: string } }[] }
      assert.deepEqual(
        body.changes.map((c) => c.folder?.id),
        [id],
      )
      assert.ok(answered - committed < 1500, `answered ${answered - committed} ms after the commit`)
      replicaSuperuser('SELECT pg_wal_replay_resume()')
    })

    function sumLagSkip(stats: ReturnType<typeof routing>): number {
      const f = stats.replicas[0]?.fallbacks
      return (f?.lagging ?? 0) + (f?.skipped ?? 0)
    }
  },
)

describe('read replicas: the replica stopped and started under load', { skip: superuserSkip }, () => {
  let db: ReplicatedDatabase
  let app: FastifyInstance
  before(async () => {
    db = await replicatedDatabase(seed)
    // No listing cache: every request reads, so the load keeps hitting the replica.
    app = await appOver(db.store, { listingCacheMb: 0 })
  })
  after(async () => {
    replicaCluster('start')
    await app?.close()
    await db?.cleanup()
  })

  it('answers every request, stays ready, and reads on the replica again once it is back', async () => {
    const statuses = new Map<number, number>()
    let running = true
    const worker = async (w: number) => {
      for (let i = 0; running; i++) {
        const res = await aliceRoot(app, `limit=${1 + ((i + w) % 5)}&page=${1 + (i % ROOT_FOLDERS)}`)
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      }
    }
    const readiness: number[] = []
    const probe = async () => {
      while (running) {
        readiness.push((await app.inject({ url: '/readyz' })).statusCode)
        await sleep(100)
      }
    }
    const load = Promise.all([worker(0), worker(1), worker(2), worker(3), probe()])
    try {
      await sleep(500)
      const beforeStop = replicaReads(db.store)
      assert.ok(beforeStop > 0, 'the replica served before it stopped')
      replicaCluster('stop')
      await sleep(500)
      const down = routing(db.store)
      await sleep(1500)
      const stillDown = routing(db.store)
      replicaCluster('start')
      const restarted = replicaReads(db.store)
      const deadline = Date.now() + 40_000
      while (replicaReads(db.store) === restarted && Date.now() < deadline) await sleep(200)
      assert.ok(replicaReads(db.store) > restarted, 'replica reads resumed by themselves')
      assert.equal(stillDown.replicas[0]?.reads, down.replicas[0]?.reads, 'no read on a stopped replica')
      assert.ok(stillDown.primaryReads > down.primaryReads, 'the primary served while the replica was down')
      const { unavailable = 0, skipped = 0 } = stillDown.replicas[0]?.fallbacks ?? {}
      assert.ok(unavailable > 0 && skipped > 0, 'the stopped replica was seen down, then skipped')
    } finally {
      running = false
      await load
    }
    assert.deepEqual([...statuses.keys()], [200], `statuses: ${JSON.stringify([...statuses])}`)
    assert.ok(readiness.length > 10 && readiness.every((s) => s === 200), `readyz: ${readiness.join(',')}`)
  })
})

describe('read replicas: a recovery conflict ends in a fallback', { skip: superuserSkip }, () => {
  const CHILDREN = 150_000
  const BIG = randomUUID()
  let db: ReplicatedDatabase
  let app: FastifyInstance
  let sql: RawSql
  before(async () => {
    // A folder so large that reading its checkpoints on the replica takes a while.
    db = await replicatedDatabase(async (store) => {
      const doc = seedDocument() as { folders: object[] }
      doc.folders.push({ id: BIG, name: 'Big', owner_id: ALICE, folder_id: null })
      for (let i = 0; i < CHILDREN; i++) doc.folders.push({ name: `n${i}`, owner_id: ALICE, folder_id: BIG })
      await store.importData(validateImport(doc, Date.now()))
    })
    app = await appOver(db.store)
    sql = await openRawSql(db.url)
    // Replay cancels a conflicting read at once instead of waiting up to 30 s for it.
    replicaSuperuser('ALTER SYSTEM SET max_standby_streaming_delay = 0')
    replicaSuperuser('SELECT pg_reload_conf()')
    await sleep(500)
  })
  after(async () => {
    replicaSuperuser('ALTER SYSTEM RESET max_standby_streaming_delay')
    replicaSuperuser('SELECT pg_reload_conf()')
    await sql?.close()
    await app?.close()
    await db?.cleanup()
  })

  it('answers from the primary, exactly as it would have, when replay cancels the replica read', async () => {
    const reference = await openStore({ ...TEST_SETTINGS, databaseUrl: db.url })
    const primaryApp = await appOver(reference)
    const deep = `folder_id=${BIG}&limit=3&page=40000`
    try {
      let conflicts = 0
      for (let attempt = 0; attempt < 20 && conflicts === 0; attempt++) {
        // A new generation: the listing and its checkpoints are read again; on the replica once replayed.
        await insertLiveFolder(sql, {
          id: randomUUID(),
          name: `a${attempt}`,
          parent: null,
          owner: ALICE,
          at: Date.now(),
        })
        await waitForReplay(db.url, db.readUrl)
        const answer = aliceRoot(app, deep)
        // The replica read holds a lock on folders; an ACCESS EXCLUSIVE lock taken on the
        // primary must be replayed, and with no standby delay replay cancels that read.
        await sleep(10 + attempt * 5)
        await sql.run('BEGIN')
        await sql.run('LOCK TABLE folders IN ACCESS EXCLUSIVE MODE')
        await sql.run('COMMIT')
        const res = await answer
        const expected = await aliceRoot(primaryApp, deep)
        assert.equal(res.statusCode, 200)
        assert.equal(res.body, expected.body)
        assert.equal(res.headers.etag, expected.headers.etag)
        conflicts = routing(db.store).replicas[0]?.fallbacks.conflict ?? 0
      }
      assert.ok(conflicts > 0, 'no recovery conflict was provoked')
    } finally {
      await primaryApp.close()
      await reference.close()
    }
  })
})
