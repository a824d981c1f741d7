import { validateImport } from '../import/validate-import.js'
import type { Store } from '../store/store.js'

/**
 * The demo data set of `seed --demo`: a user with a few levels of folders (one of them
 * deleted, one with enough children to page through), some files, and a second user whose
 * folders the demo user must never see. Fixed ids make it idempotent and let the README
 * show a request that works verbatim. Demo data only: its session id is public.
 */

export const DEMO_USER_ID = 'de000000-0000-4000-8000-000000000001'
export const DEMO_SESSION_ID = 'de000000-0000-4000-8000-00000000c00c'
const NEIGHBOUR_ID = 'de000000-0000-4000-8000-000000000002'
const DOCUMENTS_ID = 'de000000-0000-4000-8000-0000000f0001'
const PROJECTS_ID = 'de000000-0000-4000-8000-0000000f0002'
const PHOTOS_ID = 'de000000-0000-4000-8000-0000000f0003'
const TAXES_ID = 'de000000-0000-4000-8000-0000000f0004'

export interface DemoSeed {
  created: boolean
  userId: string
  username: string
  sessionId: string
}

function demoDataFile(): unknown {
  const folder = (name: string, folder_id: string | null, extra: Record<string, unknown> = {}) => ({
    name,
    folder_id,
    owner_id: DEMO_USER_ID,
    ...extra,
  })
  const projects = Array.from({ length: 60 }, (_, i) => folder(`Project ${i + 1}`, PROJECTS_ID))
  return {
    users: [
      {
        id: DEMO_USER_ID,
        username: 'demo',
        email: 'demo@example.org',
        avatar_url: null,
        is_suspended: false,
      },
      { id: NEIGHBOUR_ID, username: 'neighbour', email: 'neighbour@example.org', is_suspended: false },
    ],
    sessions: [{ id: DEMO_SESSION_ID, user_id: DEMO_USER_ID, expires_at: null }],
    folders: [
      folder('Documents', null, { id: DOCUMENTS_ID }),
      folder('Projects', null, { id: PROJECTS_ID }),
      folder('Photos', null, { id: PHOTOS_ID }),
      folder('Music', null),
      folder('archive', null),
      folder('Old stuff', null, { is_deleted: true }),
      folder('Invoices', DOCUMENTS_ID),
      folder('Contracts', DOCUMENTS_ID),
      folder('Taxes', DOCUMENTS_ID, { id: TAXES_ID }),
      folder('2024', TAXES_ID),
      folder('2025', TAXES_ID),
      folder('Holidays 2025', PHOTOS_ID),
      folder('Écoles', PHOTOS_ID),
      folder('Family', PHOTOS_ID),
      ...projects,
      { name: 'Secret plans', folder_id: null, owner_id: NEIGHBOUR_ID },
    ],
    files: [
      { name: 'readme.txt', folder_id: null, owner_id: DEMO_USER_ID, size: 120 },
      { name: 'invoice-2025-01.pdf', folder_id: DOCUMENTS_ID, owner_id: DEMO_USER_ID, size: 48_213 },
      { name: 'return-2025.pdf', folder_id: TAXES_ID, owner_id: DEMO_USER_ID, size: 91_400 },
    ],
  }
}

export async function seedDemo(store: Store, now: number): Promise<DemoSeed> {
  const seed = { userId: DEMO_USER_ID, username: 'demo', sessionId: DEMO_SESSION_ID }
  if ((await store.findUser(DEMO_USER_ID)) === null) {
    await store.importData(validateImport(demoDataFile(), now))
    return { created: true, ...seed }
  }
  // The data is there; bring the session back if it was revoked.
  if ((await store.findSessionUser(DEMO_SESSION_ID, now)) === null) {
    await store.deleteSession(DEMO_SESSION_ID)
    await store.importData(
      validateImport({ sessions: [{ id: DEMO_SESSION_ID, user_id: DEMO_USER_ID, expires_at: null }] }, now),
    )
  }
  return { created: false, ...seed }
}
