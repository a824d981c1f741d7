import type { Store } from '../../../src/store/store.js'
import type { Backend } from '../databases/backends.js'
import { startService, type Service } from '../processes/cli.js'

/**
 * A fresh database of one backend, filled by `fill` through its Store, then served by a
 * real `serve` process (startService, test/helpers/processes/cli.ts). The store stays open beside the
 * service, so a test can change data the way other writers do (docs/api.md "Data model").
 */
export interface ServedBackend {
  service: Service
  store: Store
  url: string
  close(): Promise<void>
}

export async function serveBackend(
  backend: Backend,
  fill: (store: Store) => Promise<unknown>,
  env: Record<string, string> = {},
): Promise<ServedBackend> {
  const database = await backend.open()
  try {
    await fill(database.store)
    const service = await startService(database.url, env)
    return {
      service,
      store: database.store,
      url: database.url,
      async close() {
        await service.stop()
        await database.cleanup()
      },
    }
  } catch (error) {
    await database.cleanup()
    throw error
  }
}
