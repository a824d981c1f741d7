import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { validateImport } from '../../src/import/validate-import.js'
import { openStore } from '../../src/store/open-store.js'
import { identityMismatch } from '../../src/store/postgres/replica-identity.js'
import type { ReplicaRefusal } from '../../src/store/replica-stats.js'
import type { Store } from '../../src/store/store.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { logRecords, startService } from '../helpers/processes/cli.js'
import { sleep } from '../helpers/http/load.js'
import { PROJECTS, seedDocument, sessionCookieHeaders } from '../helpers/apps/operability-db.js'
import { ALICE, ALICE_SESSION } from '../helpers/fixtures/users.js'
import { openRawSql } from '../../harness/raw-sql.js'
import {
  replicaSkip,
  replicatedDatabase,
  routing,
  waitForReplay,
  type ReplicatedDatabase,
} from '../helpers/databases/replica.js'
import { appOver } from '../helpers/apps/test-app.js'

/**
 * Replica identity (docs/scale-out.md): a URL of DATABASE_READ_URLS is read only once it is
 * verified to be a streaming replica of the very database DATABASE_URL names. A standby of
 * another database of the cluster (the same data imported into it, then changed) and the
 * primary's other database are refused and reported (/metrics, the log, the listener), never
 * read; the service answers from the primary and stays ready.
 */

const seed = (store: Store) => store.importData(validateImport(seedDocument(), Date.now()))
const RENAMED = 'renamed in the other database'

/** The first replica's refusal once a probe decided it (or null after `timeoutMs`). */
async function refusalOf(store: Store, timeoutMs = 15_000): Promise<ReplicaRefusal | null> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const refused = routing(store).replicas[0]?.refused ?? null
    if (refused !== null || Date.now() > deadline) return refused
    await sleep(50)
  }
}

async function metricsText(app: FastifyInstance): Promise<string> {
  return (await app.inject({ url: '/metrics' })).body
}

describe('read replicas: identity', { skip: replicaSkip }, () => {
  let mine: ReplicatedDatabase
  let other: ReplicatedDatabase
  let projectsName: string
  before(async () => {
    mine = await replicatedDatabase(seed)
    other = await replicatedDatabase(seed)
    // The same data imported into another database, then changed there, as in a copy.
    const sql = await openRawSql(other.url)
    try {
      await sql.run('UPDATE folders SET name = ? WHERE id = ?', RENAMED, PROJECTS)
    } finally {
      await sql.close()
    }
    await waitForReplay(other.url, other.readUrl)
    const listed = await mine.store.listFolders({ ownerId: ALICE, parentId: null, page: 1, limit: 100 })
    projectsName = listed?.folders.find((folder) => folder.id === PROJECTS)?.name ?? ''
    assert.notEqual(projectsName, '')
  })
  after(async () => {
    await mine?.cleanup()
    await other?.cleanup()
  })

  it("accepts the same cluster's standby of the same database", () => {
    assert.equal(routing(mine.store).replicas[0]?.refused, null)
    assert.notEqual(routing(mine.store).replicas[0]?.lagSeconds, null, 'in rotation')
  })

  for (const [what, readUrl, reason] of [
    ["the replica's copy of another database", () => other.readUrl, 'other-database'],
    ["the primary's other database", () => other.url, 'not-a-replica'],
  ] as const) {
    it(`refuses ${what} (${reason}): never read, reported, the instance ready`, async () => {
      const store = await openStore({
        ...TEST_SETTINGS,
        databaseUrl: mine.url,
        databaseReadUrls: [readUrl()],
      })
      const heard: string[] = []
      store.onReplicaRefused?.((_replica, refusal) => heard.push(refusal))
      const app = await appOver(store)
      try {
        assert.equal(await refusalOf(store), reason)
        const res = await app.inject({
          url: '/v1/folders?limit=100',
          headers: sessionCookieHeaders(ALICE_SESSION),
        })
        assert.equal(res.statusCode, 200)
        const names = (JSON.parse(res.body) as { folders: { id: string; name: string }[] }).folders
        assert.equal(names.find((folder) => folder.id === PROJECTS)?.name, projectsName, "the primary's data")
        assert.equal(routing(store).replicas[0]?.reads, 0, 'nothing was read there')
        assert.ok(routing(store).primaryReads > 0)
        assert.match(
          await metricsText(app),
          new RegExp(`^db_replica_refused\\{replica="[^"]+",reason="${reason}"\\} 1$`, 'm'),
        )
        assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
        await sleep(2500) // more probes: reported once, still refused
        assert.deepEqual(heard, [reason])
        assert.equal(routing(store).replicas[0]?.reads, 0)
      } finally {
        await app.close()
      }
    })
  }

  it('`serve` logs a refused replica once, by host and port, without the password', async () => {
    const password = decodeURIComponent(new URL(other.readUrl).password)
    const service = await startService(mine.url, { DATABASE_READ_URLS: other.readUrl })
    try {
      const deadline = Date.now() + 15_000
      const refusals = () => logRecords(service).filter((record) => record.reason === 'other-database')
      while (refusals().length === 0 && Date.now() < deadline) await sleep(100)
      await sleep(2000)
      assert.equal(refusals().length, 1, service.lines().join('\n'))
      assert.match(String(refusals()[0]?.msg), /DATABASE_READ_URLS: .* is not a streaming replica/)
      assert.ok(!service.lines().join('\n').includes(password), 'no password in the log')
    } finally {
      await service.stop()
    }
  })
})

describe('replica identity: what sets databases apart', () => {
  const primary = { cluster: '7001', database: '16384/folders', deployment: 'ab' }
  it('the same cluster, database and deployment key is a replica of it', () => {
    assert.equal(identityMismatch(primary, { ...primary }), null)
  })
  it('another cluster, another database oid or name, or another key is not', () => {
    assert.equal(identityMismatch(primary, { ...primary, cluster: '7002' }), 'other-cluster')
    assert.equal(identityMismatch(primary, { ...primary, database: '16385/folders' }), 'other-database')
    assert.equal(identityMismatch(primary, { ...primary, database: '16384/copy' }), 'other-database')
    assert.equal(identityMismatch(primary, { ...primary, deployment: 'cd' }), 'other-database')
    assert.equal(identityMismatch(primary, { ...primary, deployment: null }), 'other-database')
  })
})
