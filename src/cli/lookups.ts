import { isUuid, normaliseUuid } from '../ids.js'
import type { Store, UserRecord } from '../store/store.js'
import { UsageError } from './run-command.js'

/** What the admin commands look up from their arguments, refused in the command line's words. */

export async function requireUser(store: Store, ref: string): Promise<UserRecord> {
  const user = await store.findUser(ref)
  if (user === null) throw new UsageError(`no user with id or username '${ref}'`)
  return user
}

export function requireUuid(value: string, what: string): string {
  if (!isUuid(value)) throw new UsageError(`${what} must be a UUID, got '${value}'`)
  return normaliseUuid(value)
}
