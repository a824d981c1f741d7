import { Backoff } from '../client/feed-pacing.js'
import { followFeed } from '../client/follow-feed.js'
import { FolderServiceError, type FolderServiceClient } from '../client/index.js'
import { sleep } from '../client/retry-after.js'

/**
 * Keeps the open folder page live: follows the folder's changes (GET /v1/folders/changes,
 * held by the service up to WAIT_SECONDS) from the cursor of the page's rel="changes" link,
 * and calls `changed` each time the feed reaches the present after a change, so the page is
 * listed again in place. A 410 (the changes are no longer kept) takes a fresh cursor, then
 * calls `changed`: the page is listed again from a point after it (after a growing pause
 * when 410s repeat). Network trouble and 503s are tried again after a pause; an empty
 * answer that came back before its wait ran out is asked again only after a second (the
 * pacing of the client's followFeed); any other problem (404: the folder is gone, 401,
 * 403) goes to `failed`, which shows it.
 */

const WAIT_SECONDS = 25
const PAUSE_MS = 5_000

export interface LiveHandlers {
  changed(signal: AbortSignal): Promise<void>
  failed(error: unknown): void
}

/** Starts following; the returned function stops it (and ends the held request at once). */
export function followChanges(
  client: FolderServiceClient,
  folderId: string | null,
  cursor: string,
  handlers: LiveHandlers,
): () => void {
  const controller = new AbortController()
  const { signal } = controller
  const backoff = new Backoff()
  void (async () => {
    let from = cursor
    while (!signal.aborted) {
      try {
        const ask = (at: string | null, wait: number) =>
          client.changes({ folderId, cursor: at ?? from, wait }, { signal })
        let pending = false
        for await (const batch of followFeed(ask, from, {
          wait: WAIT_SECONDS,
          firstWait: WAIT_SECONDS,
          signal,
          backoff,
        })) {
          from = batch.cursor
          pending ||= batch.changes.length > 0
          if (pending && batch.atPresent) {
            pending = false
            await handlers.changed(signal)
          }
        }
      } catch (error) {
        if (signal.aborted) return
        if (error instanceof FolderServiceError && error.code === 'CURSOR_EXPIRED') {
          // Repeated 410s (a service reset over and over) are listed again after growing pauses.
          await sleep(backoff.failed(), signal).catch(() => undefined)
          from = (await client.changes({ folderId }, { signal }).catch(() => null))?.cursor ?? from
          await handlers.changed(signal).catch(() => undefined)
        } else if (
          error instanceof FolderServiceError &&
          ['NETWORK_ERROR', 'TIMEOUT', 'UNAVAILABLE', 'RATE_LIMITED', 'BAD_RESPONSE'].includes(error.code)
        ) {
          await sleep(PAUSE_MS, signal).catch(() => undefined)
        } else {
          handlers.failed(error)
          return
        }
      }
    }
  })()
  return () => controller.abort()
}
