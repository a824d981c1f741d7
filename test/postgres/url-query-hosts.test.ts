import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { openStore } from '../../src/store/open-store.js'
import { StoreUnavailableError, type Store } from '../../src/store/store.js'
import { appOver } from '../helpers/apps/test-app.js'
import { TEST_SETTINGS } from '../helpers/databases/backends.js'
import { freshPostgresDatabase } from '../helpers/databases/postgres.js'
import { tcpProxy, type TcpProxy } from '../helpers/databases/tcp-proxy.js'

/**
 * A host list whose ports are given in the query (`?port=`), as libpq reads it: the service
 * connects where the URL says, and /metrics and its messages name that host and port, not
 * the host part's. A TCP proxy in front of the test server stands for the one host that
 * answers, so the test sees where the connections went.
 */

const databaseUrl = process.env.TEST_DATABASE_URL ?? ''
/** No port listens there. */
const DEAD_PORT = 1

/** `url` with its host part replaced by `hostPart` and `query` appended. */
function rewritten(url: string, hostPart: string, query: string): string {
  const parsed = new URL(url)
  return `${url.replace(`@${parsed.host}/`, `@${hostPart}/`)}?${query}`
}

describe(
  'PostgreSQL: host and port lists in the query of DATABASE_URL',
  { skip: !databaseUrl && 'TEST_DATABASE_URL is not set' },
  () => {
    let db: Awaited<ReturnType<typeof freshPostgresDatabase>>
    let proxy: TcpProxy
    const opened: Store[] = []
    const open = async (url: string) => {
      const store = await openStore({
        ...TEST_SETTINGS,
        dbConnectTimeoutMs: 1000,
        databaseUrl: url,
        failoverWaitMs: 300,
      })
      opened.push(store)
      return store
    }

    /** The host /metrics names as the primary, and whether listings are served. */
    async function servedAt(store: Store): Promise<string | undefined> {
      const app = await appOver(store)
      try {
        await store.listFolders({
          ownerId: '0a0e0000-0000-4000-8000-000000000001',
          parentId: null,
          page: 1,
          limit: 10,
        })
        const metrics = (await app.inject('/metrics')).body
        return /^db_primary\{host="([^"]+)"\} 1$/m.exec(metrics)?.[1]
      } finally {
        await app.close()
      }
    }

    before(async () => {
      db = await freshPostgresDatabase(databaseUrl)
      proxy = await tcpProxy(Number(new URL(databaseUrl).port))
    })

    after(async () => {
      for (const store of opened) await store.close()
      await proxy.stop()
      await db.cleanup()
    })

    it('takes ?port= for every host and names the port the statements go to', async () => {
      const before = proxy.accepted()
      const store = await open(
        rewritten(
          db.url,
          `127.0.0.1:${DEAD_PORT},127.0.0.1:2`,
          `port=${proxy.port}&target_session_attrs=read-write`,
        ),
      )
      assert.equal(await servedAt(store), `127.0.0.1:${proxy.port}`)
      assert.ok(proxy.accepted() > before, 'the statements went through the port the URL gives')
    })

    it("takes libpq's ?port= list, a port per host: the second host is reached", async () => {
      const before = proxy.accepted()
      const store = await open(
        rewritten(
          db.url,
          '127.0.0.1,127.0.0.1',
          `port=${DEAD_PORT},${proxy.port}&target_session_attrs=read-write`,
        ),
      )
      assert.equal(await servedAt(store), `127.0.0.1:${proxy.port}`)
      assert.ok(proxy.accepted() > before, 'the statements went through the second host')
    })

    it('names the hosts of the list, as the URL gives them, when none answers', async () => {
      const store = await open(
        rewritten(
          db.url,
          '127.0.0.1,127.0.0.1',
          `port=${DEAD_PORT},${proxy.port}&target_session_attrs=read-write`,
        ),
      )
      await proxy.stop()
      await assert.rejects(
        store.listFolders({
          ownerId: '0a0e0000-0000-4000-8000-000000000001',
          parentId: null,
          page: 1,
          limit: 10,
        }),
        (error: Error) => {
          assert.ok(error instanceof StoreUnavailableError, String(error))
          assert.match(
            error.message,
            new RegExp(`127\\.0\\.0\\.1:${DEAD_PORT},127\\.0\\.0\\.1:${proxy.port}\\b`),
          )
          assert.doesNotMatch(error.message, /:5432\b/)
          return true
        },
      )
    })
  },
)
