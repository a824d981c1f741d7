/**
 * The test users and their live sessions, one set for every suite, so that no suite invents
 * its own ids: Alice and Bob own folders, Frozen is suspended, Carol owns nothing. Each suite
 * opens a fresh database, so sharing the ids shares no data. `usersAndSessions` gives the
 * `users` and `sessions` members of an import document (docs/api.md "Import format").
 */

export const ALICE: string = '0a11ce00-0000-4000-8000-000000000001'
export const BOB: string = '0b0b0000-0000-4000-8000-000000000002'
/** suspended: every request with its session is a 401 */
export const FROZEN: string = '0f0f0000-0000-4000-8000-000000000003'
export const CAROL: string = '0ca20100-0000-4000-8000-000000000004'

export const ALICE_SESSION: string = '5e551011-a11c-4e00-8000-00000000000a'
export const BOB_SESSION: string = '5e551011-b0b0-4e00-8000-00000000000b'
export const FROZEN_SESSION: string = '5e551011-f0f0-4e00-8000-00000000000f'
export const CAROL_SESSION: string = '5e551011-ca20-4e00-8000-00000000000c'
/** well-formed, but no user's */
export const UNKNOWN_SESSION: string = '5e551011-dead-4e00-8000-0000000000ff'

const USERS = {
  alice: { user: { id: ALICE, username: 'alice' }, session: ALICE_SESSION },
  bob: { user: { id: BOB, username: 'bob' }, session: BOB_SESSION },
  frozen: { user: { id: FROZEN, username: 'frozen', is_suspended: true }, session: FROZEN_SESSION },
  carol: { user: { id: CAROL, username: 'carol' }, session: CAROL_SESSION },
}

/** The import document's users and sessions for the users named, each with its one session. */
export function usersAndSessions(...names: (keyof typeof USERS)[]) {
  return {
    users: names.map((name) => USERS[name].user),
    sessions: names.map((name) => ({ id: USERS[name].session, user_id: USERS[name].user.id })),
  }
}
