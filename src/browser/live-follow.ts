import { FolderServiceError, type FolderServiceClient } from '../client/index.js'

/**
 * Keeps the open folder page live: follows the folder's changes (GET /v1/folders/changes,
 * held by the service up to WAIT_SECONDS) from the cursor of the page's rel="changes" link,
 * and calls `changed` each time the feed reaches the present after a change, so the page is
 * listed again in place. A 410 (the changes are no longer kept) takes a fresh cursor, then
 * calls `changed`: the page is listed again from a point after it. Network trouble and 503s
 * are tried again after a pause; any other problem (404: the folder is gone, 401, 403) goes
 * to `failed`, which shows it.
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
  void (async () => {
    let from = cursor
    let pending = false
    while (!signal.aborted) {
      try {
        const answer = await client.changes(
          { folderId, cursor: from, wait: pending ? 0 : WAIT_SECONDS },
          { signal },
        )
        from = answer.cursor
        pending ||= answer.changes.length > 0
        if (pending && !answer.has_more) {
          pending = false
          await handlers.changed(signal)
        }
      } catch (error) {
        if (signal.aborted) return
        if (error instanceof FolderServiceError && error.code === 'CURSOR_EXPIRED') {
          from = (await client.changes({ folderId }, { signal }).catch(() => null))?.cursor ?? from
          await handlers.changed(signal).catch(() => undefined)
        } else if (
          error instanceof FolderServiceError &&
          ['NETWORK_ERROR', 'TIMEOUT', 'UNAVAILABLE', 'RATE_LIMITED', 'BAD_RESPONSE'].includes(error.code)
        ) {
          await new Promise((resolve) => setTimeout(resolve, PAUSE_MS))
        } else {
          handlers.failed(error)
          return
        }
      }
    }
  })()
  return () => controller.abort()
}
