import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { validateImport } from '../../src/import/validate-import.js'
import { openStore } from '../../src/store/open-store.js'
import type { PrimaryChange } from '../../src/store/failover-stats.js'
import type { ListFoldersQuery, Store } from '../../src/store/store.js'
import { parseHostList } from '../../src/database-url/host-list.js'
import { PrimaryFinder } from '../../src/store/postgres/primary-finder.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { freshPostgresDatabase, withAdminClient } from '../helpers/databases/postgres.js'
import { replicaSkip } from '../helpers/databases/replica.js'
import { tcpProxy, type TcpProxy } from '../helpers/databases/tcp-proxy.js'
import { writeJson, tempDir } from '../helpers/processes/cli-database.js'
import { runCli } from '../helpers/processes/cli.js'

/**
 * A host list in DATABASE_URL (section "High availability" of docs/operations.md) on the
 * machine's primary (TEST_DATABASE_URL) and its streaming replica (TEST_DATABASE_READ_URL):
 * the writable host is found among a dead port and a standby, the command line writes there,
 * a primary that turns into a standby under open connections is left for the next host with
 * reads riding through, and no primary at all is a 503 within FAILOVER_WAIT_MS, never a hang.
 * The real switchover and crash of a pg_auto_failover formation are
 * test/faults/pg-auto-failover.test.ts.
 */

const OWNER = 'fa110000-0000-4000-8000-000000000001'
const FOLDER = 'fa110000-0000-4000-8000-0000000000f1'
const ROOT: ListFoldersQuery = { ownerId: OWNER, parentId: null, page: 1, limit: 50 }
/** No port listens there: a host that is gone. */
const DEAD = '127.0.0.1:1'

/** `url` (one host) with its host part replaced by `hosts` and target_session_attrs added. */
function hostList(url: string, hosts: string[], attrs = 'read-write'): string {
  const parsed = new URL(url)
  const single = `${parsed.hostname}:${parsed.port}`
  return `${url.replace(`@${single}/`, `@${hosts.join(',')}/`)}?target_session_attrs=${attrs}`
}

const portOf = (url: string) => new URL(url).port

describe('PostgreSQL: a host list in DATABASE_URL', { skip: replicaSkip }, () => {
  const primaryUrl = process.env.TEST_DATABASE_URL ?? ''
  const replicaUrl = process.env.TEST_DATABASE_READ_URL ?? ''
  let db: Awaited<ReturnType<typeof freshPostgresDatabase>>
  let primary: string
  let standby: string
  const opened: Store[] = []
  const open = async (url: string, failoverWaitMs = 5000) => {
    const store = await openStore({
      ...TEST_SETTINGS,
      dbConnectTimeoutMs: 1000,
      databaseUrl: url,
      failoverWaitMs,
    })
    opened.push(store)
    return store
  }

  before(async () => {
    db = await freshPostgresDatabase(primaryUrl)
    primary = `127.0.0.1:${portOf(primaryUrl)}`
    standby = `127.0.0.1:${portOf(replicaUrl)}`
    await db.store.importData(
      validateImport(
        {
          users: [{ id: OWNER, username: 'fay' }],
          folders: [{ id: FOLDER, name: 'Before', owner_id: OWNER }],
        },
        Date.now(),
      ),
    )
  })

  after(async () => {
    await Promise.all(opened.map((store) => store.close()))
    await db?.cleanup()
  })

  it('uses the host that is writable and not in recovery, past a dead host and a standby', async () => {
    const store = await open(hostList(db.url, [DEAD, standby, primary]))
    assert.equal(store.primaryFailover?.()?.primary, primary)
    // A write succeeds: it went to the primary (the standby would refuse it with 25006).
    await store.addFolder({
      id: 'fa110000-0000-4000-8000-0000000000f2',
      name: 'Written',
      folder_id: null,
      owner_id: OWNER,
      is_deleted: false,
      created_at: Date.now(),
      updated_at: Date.now(),
    })
    const page = await db.store.listFolders(ROOT)
    assert.deepEqual(
      page?.folders.map((folder) => folder.name),
      ['Before', 'Written'],
    )
  })

  it('with target_session_attrs=any, or none, takes the first host that answers (libpq)', async () => {
    // (A store would then refuse to start: its migration cannot run on a standby.)
    for (const attrs of ['any', '']) {
      const url = hostList(db.url, [DEAD, standby, primary], attrs).replace(/\?target_session_attrs=$/, '')
      const finder = new PrimaryFinder(parseHostList(url), 1000)
      assert.equal((await finder.find(Date.now() + 3000)).target, standby)
      finder.close()
    }
  })

  it('refuses start-up in one line naming each host when none is the primary, within the wait', async () => {
    const started = Date.now()
    await assert.rejects(open(hostList(db.url, [DEAD, standby]), 300), (error: Error) => {
      assert.match(error.message, new RegExp(`no PostgreSQL primary among ${DEAD},${standby}`))
      assert.match(error.message, new RegExp(`${standby} in recovery`))
      assert.doesNotMatch(error.message, new RegExp(new URL(db.url).password))
      return true
    })
    assert.ok(Date.now() - started < 300 + 1000 + 2000, `gave up after ${Date.now() - started} ms`)
  })

  it('the command line writes to the primary of the list (import)', async () => {
    const dir = tempDir()
    const file = writeJson(dir.dir, 'more.json', {
      folders: [{ id: 'fa110000-0000-4000-8000-0000000000f3', name: 'Imported', owner_id: OWNER }],
    })
    const result = await runCli(['import', file], {
      env: { DATABASE_URL: hostList(db.url, [standby, primary]) },
    })
    dir.remove()
    assert.equal(result.code, 0, result.stderr)
    const page = await db.store.listFolders(ROOT)
    assert.ok(page?.folders.some((folder) => folder.name === 'Imported'))
  })

  describe('a primary that becomes a standby under open connections', () => {
    let proxy: TcpProxy
    before(async () => {
      proxy = await tcpProxy(Number(portOf(primaryUrl)))
    })
    after(async () => {
      await proxy?.stop()
    })

    it('is left for the next host: reads in flight ride through, one change is reported', async () => {
      const moving = `127.0.0.1:${proxy.port}`
      const store = await open(hostList(db.url, [moving, primary]))
      const changes: PrimaryChange[] = []
      store.onPrimaryChange?.((change) => changes.push(change))
      assert.equal(store.primaryFailover?.()?.primary, moving)
      // Readers throughout; halfway, the host behind the proxy turns into the standby.
      let reads = 0
      const readers = Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 40; i++) {
          const page = await store.listFolders(ROOT)
          assert.ok(page !== null && page.folders.length >= 1)
          reads++
        }
      })
      while (reads < 40) await new Promise((resolve) => setTimeout(resolve, 5))
      proxy.retarget(Number(portOf(replicaUrl)))
      await Promise.all(readers)
      assert.equal(reads, 160)
      assert.equal(store.primaryFailover?.()?.primary, primary)
      assert.equal(changes.length, 1)
      assert.equal(changes[0]?.from, moving)
      assert.equal(changes[0]?.to, primary)
      assert.equal(store.primaryFailover?.()?.changes, 1)
      // New statements go to the primary, not to the standby behind the old host.
      await store.setUserFrozen(OWNER, false, Date.now())
    })

    it('LISTEN moves to the new primary: a commit there wakes the store within a second', async () => {
      proxy.retarget(Number(portOf(primaryUrl)))
      const moving = `127.0.0.1:${proxy.port}`
      const store = await open(hostList(db.url, [moving, primary]))
      const heard: (string | null)[] = []
      const signals = store.changeSignals?.((ownerId) => heard.push(ownerId))
      assert.ok(signals !== null && signals !== undefined)
      signals.resume()
      const until = async (what: () => boolean, ms: number) => {
        const end = Date.now() + ms
        while (!what() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
        return what()
      }
      // Listening once it reports a commit of unknown owner (nothing heard before it).
      assert.ok(await until(() => heard.includes(null), 3000), 'listening on the first primary')
      const listening = heard.length
      proxy.retarget(Number(portOf(replicaUrl)))
      assert.ok((await store.listFolders(ROOT)) !== null)
      assert.equal(store.primaryFailover?.()?.primary, primary)
      assert.ok(
        await until(() => heard.slice(listening).includes(null), 3000),
        'listening again after the move',
      )
      await db.store.renameFolder(FOLDER, `Renamed ${Date.now()}`, Date.now())
      assert.ok(
        await until(() => heard.includes(OWNER), 1000),
        `a commit on the new primary heard: ${JSON.stringify(heard)}`,
      )
    })

    it('no primary: a read waits FAILOVER_WAIT_MS, then 503; a primary back serves within a second', async () => {
      proxy.retarget(Number(portOf(primaryUrl)))
      const store = await open(hostList(db.url, [`127.0.0.1:${proxy.port}`]), 400)
      assert.ok((await store.listFolders(ROOT)) !== null)
      proxy.retarget(Number(portOf(replicaUrl)))
      const started = Date.now()
      await assert.rejects(store.listFolders(ROOT), (error: Error) => {
        assert.equal(error.name, 'StoreUnavailableError')
        assert.match(error.message, /in recovery/)
        return true
      })
      const waited = Date.now() - started
      assert.ok(waited >= 300 && waited < 400 + 1500, `answered after ${waited} ms`)
      // /readyz's check: past the budget without a primary, not ready, at once.
      await new Promise((resolve) => setTimeout(resolve, 100))
      const pinged = Date.now()
      await assert.rejects(store.ping())
      assert.ok(Date.now() - pinged < 1000)
      proxy.retarget(Number(portOf(primaryUrl)))
      // The search goes on without callers: the first 200 comes within a second.
      const back = Date.now()
      for (;;) {
        const page = await store.listFolders(ROOT).catch(() => undefined)
        if (page !== undefined) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      assert.ok(Date.now() - back < 1000, `back after ${Date.now() - back} ms`)
    })

    it('an import cut by the move writes nothing, says so in one line, and runs again', async () => {
      proxy.retarget(Number(portOf(primaryUrl)))
      const dir = tempDir()
      const count = 60_000
      const file = writeJson(dir.dir, 'big.json', {
        folders: Array.from({ length: count }, (_, i) => ({
          id: `fa120000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
          name: `bulk ${i}`,
          owner_id: OWNER,
        })),
      })
      const url = hostList(db.url, [`127.0.0.1:${proxy.port}`, primary])
      const importing = runCli(['import', file], { env: { DATABASE_URL: url } })
      // Cut once the import's transaction is under way (its rows are not visible before COMMIT).
      await withAdminClient(db.url, async (client) => {
        for (let i = 0; i < 200; i++) {
          const { rows } = await client.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query NOT LIKE '%pg_stat_activity%'",
          )
          if (Number(rows[0]?.n) > 0) break
          await new Promise((resolve) => setTimeout(resolve, 25))
        }
      })
      proxy.retarget(Number(portOf(replicaUrl)))
      const cut = await importing
      assert.notEqual(cut.code, 0, cut.stdout)
      const lines = cut.stderr
        .trim()
        .split('\n')
        .filter((line) => line.startsWith('folder-service:'))
      assert.equal(lines.length, 1, cut.stderr)
      assert.match(lines[0] ?? '', /nothing was imported, run the import again$/)
      const bulk = async () =>
        withAdminClient(db.url, async (client) => {
          const { rows } = await client.query<{ n: string }>(
            "SELECT count(*) AS n FROM folders WHERE name LIKE 'bulk %'",
          )
          return Number(rows[0]?.n)
        })
      assert.equal(await bulk(), 0)
      const again = await runCli(['import', file], { env: { DATABASE_URL: url } })
      assert.equal(again.code, 0, again.stderr)
      assert.equal(await bulk(), count)
      dir.remove()
    })
  })
})
