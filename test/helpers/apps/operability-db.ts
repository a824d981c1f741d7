import { after, before } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { validateImport } from '../../../src/import/validate-import.js'
import type { Store } from '../../../src/store/store.js'
import { sqliteBackend } from '../databases/backends.js'
import { appOver, cookie, type AppOverrides } from './test-app.js'
import {
  ALICE,
  ALICE_SESSION,
  BOB,
  BOB_SESSION,
  CAROL,
  CAROL_SESSION,
  FROZEN,
  FROZEN_SESSION,
} from '../fixtures/users.js'

/**
 * A small seeded SQLite database (the users of fixtures/users.ts, Alice's folders, one of Bob's)
 * and the app over it, for the suites that need one known data set on one backend.
 */

/** Alice's folder "Projects", parent of PROJECT_CHILDREN folders. */
export const PROJECTS = 'f0000000-0000-4000-8000-000000000001'
export const ROOT_FOLDERS = 7
export const PROJECT_CHILDREN = 3

/** Request headers carrying the session cookie, for app.inject. */
export const sessionCookieHeaders = (session: string) => ({ cookie: cookie(session) })

export function seedDocument(): unknown {
  const at = '2026-01-01T00:00:00.000Z'
  const root = Array.from({ length: ROOT_FOLDERS - 1 }, (_, i) => ({
    name: `Root ${String(i).padStart(2, '0')}`,
    owner_id: ALICE,
    folder_id: null,
    created_at: at,
    updated_at: at,
  }))
  const children = Array.from({ length: PROJECT_CHILDREN }, (_, i) => ({
    name: `Child ${i}`,
    owner_id: ALICE,
    folder_id: PROJECTS,
    created_at: at,
    updated_at: at,
  }))
  return {
    users: [
      { id: ALICE, username: 'alice', email: 'alice@example.org', avatar_url: null },
      { id: BOB, username: 'bob', avatar_url: 'https://example.org/bob.png' },
      { id: FROZEN, username: 'frozen', is_suspended: true },
      { id: CAROL, username: 'carol' },
    ],
    sessions: [
      { id: ALICE_SESSION, user_id: ALICE },
      { id: BOB_SESSION, user_id: BOB },
      { id: FROZEN_SESSION, user_id: FROZEN },
      { id: CAROL_SESSION, user_id: CAROL },
    ],
    folders: [
      { id: PROJECTS, name: 'Projects', owner_id: ALICE, folder_id: null, created_at: at, updated_at: at },
      ...root,
      ...children,
      { name: 'Bob stuff', owner_id: BOB, folder_id: null },
    ],
  }
}

export interface Seeded {
  store: Store
  url: string
  cleanup(): Promise<void>
}

/** A fresh SQLite database holding {@link seedDocument}. */
export async function openSeeded(): Promise<Seeded> {
  const opened = await sqliteBackend.open()
  await opened.store.importData(validateImport(seedDocument(), Date.now()))
  return opened
}

/**
 * Registers hooks that open a seeded database and the app over it before the suite's tests
 * and close both after them; the tests read `ctx.app` and `ctx.seeded`.
 */
export function useSeededApp(config: AppOverrides = {}): { app: FastifyInstance; seeded: Seeded } {
  const ctx = {} as { app: FastifyInstance; seeded: Seeded }
  before(async () => {
    ctx.seeded = await openSeeded()
    ctx.app = await appOver(ctx.seeded.store, config)
  })
  after(async () => {
    await ctx.app.close()
    await ctx.seeded.cleanup()
  })
  return ctx
}
