import { SESSION_BATCH, type ServingStore, type SessionUser } from './store.js'

/**
 * `sessionIds` read again at `now`, in order (a session revoked, expired or whose user is
 * gone: null), in one statement per {@link SESSION_BATCH} sent at once; a lone id is the
 * arrival's own statement. The feeds' checks after a wake and the watcher's sweep of held
 * sessions both read this way, never one statement a session.
 */
export function findSessionsInBatches(
  store: Pick<ServingStore, 'findSessionUser' | 'findSessionUsers'>,
  sessionIds: readonly string[],
  now: number,
): Promise<(SessionUser | null)[]> {
  const found: Promise<(SessionUser | null)[]>[] = []
  for (let from = 0; from < sessionIds.length; from += SESSION_BATCH) {
    const batch = sessionIds.slice(from, from + SESSION_BATCH)
    const lone = batch.length === 1 ? batch[0] : undefined
    found.push(
      lone === undefined
        ? store.findSessionUsers(batch, now)
        : store.findSessionUser(lone, now).then((user) => [user]),
    )
  }
  return Promise.all(found).then((batches) =>
    batches.length === 1 ? (batches[0] as (SessionUser | null)[]) : batches.flat(),
  )
}
