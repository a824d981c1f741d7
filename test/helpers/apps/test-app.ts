import type { FastifyInstance, FastifyServerOptions, LightMyRequestResponse } from 'fastify'
import { buildApp, type AppOptions } from '../../../src/app.js'
import { DEFAULTS, type Config } from '../../../src/config.js'
import type { ServingStore, Store } from '../../../src/store/store.js'
import type { Backend } from '../databases/backends.js'
import type { toBody } from '../fixtures/contract-data.js'

/** The one test app builder (`appOver`), and requests to it through app.inject. */

export interface TestApp {
  app: FastifyInstance
  store: Store
  /** the URL that opens the same database again */
  url: string
  backend: Backend['name']
  close(): Promise<void>
}

/** What a suite changes from the test app's settings, and its event streams' timing. */
export type AppOverrides = Partial<Config> & Pick<AppOptions, 'eventStream'>

/**
 * THE test app: the HTTP app over any store (a real one or a failing wrapper), ready, with
 * the service's defaults except that it is silent and not rate limited. A suite states what
 * it changes from that in `overrides` (and passes a logger to read the log).
 */
export async function appOver(
  store: ServingStore,
  overrides: AppOverrides = {},
  logger: FastifyServerOptions['logger'] = false,
): Promise<FastifyInstance> {
  const { eventStream, ...settings } = overrides
  const config: Config = {
    ...DEFAULTS,
    logLevel: 'silent',
    rateLimitPerMinute: 0,
    authFailuresPerMinute: 0,
    ...settings,
  }
  const app = await buildApp({ store, config, eventStream, logger })
  await app.ready()
  return app
}

/** A fresh, empty store of `backend` and the app over it. */
export async function appFor(backend: Backend): Promise<TestApp> {
  const opened = await backend.open()
  const { store, url } = opened
  let app: FastifyInstance
  try {
    app = await appOver(store)
  } catch (error) {
    await opened.cleanup()
    throw error
  }
  return {
    app,
    store,
    url,
    backend: backend.name,
    async close() {
      try {
        await app.close()
      } finally {
        await opened.cleanup()
      }
    },
  }
}

export function cookie(sessionId: string): string {
  return `session_id=${sessionId}`
}

export interface ListRequest {
  /** a session id, or a whole Cookie header with `cookieHeader` */
  session?: string
  cookieHeader?: string
  /** the raw query string, without `?` */
  query?: string
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS'
  headers?: Record<string, string>
  url?: string
}

export function request(app: FastifyInstance, r: ListRequest = {}): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { ...r.headers }
  if (r.cookieHeader !== undefined) headers.cookie = r.cookieHeader
  else if (r.session !== undefined) headers.cookie = cookie(r.session)
  const path = r.url ?? '/v1/folders'
  return app.inject({
    method: r.method ?? 'GET',
    url: r.query === undefined ? path : `${path}?${r.query}`,
    headers,
  })
}

export interface FolderListJson {
  folders: ReturnType<typeof toBody>[]
  total: number
  page: number
  limit: number
}

export interface ProblemJson {
  type: string
  title: string
  status: number
  code: string
  detail: string
  request_id: string
}

export function listBody(res: LightMyRequestResponse): FolderListJson {
  return JSON.parse(res.payload) as FolderListJson
}

export function problemBody(res: LightMyRequestResponse): ProblemJson {
  return JSON.parse(res.payload) as ProblemJson
}
