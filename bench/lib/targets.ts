import type { ListedFolder } from './dataset.js'

/**
 * One request the bench sends, with the exact answer the service owes it (docs/api.md "200 body"
 * and "Order"). Checking `total`, `page`, `limit` and the ids in order catches
 * a wrong count, a wrong page and a wrong sort alike.
 */
export interface Target {
  path: string
  cookie: string
  total: number
  page: number
  limit: number
  /** ids of the folders on this page, in order */
  ids: string[]
}

export function pageTarget(folder: ListedFolder, page: number, limit: number): Target {
  return {
    path:
      folder.folderId === null
        ? `/v1/folders?page=${page}&limit=${limit}`
        : `/v1/folders?folder_id=${folder.folderId}&page=${page}&limit=${limit}`,
    cookie: `session_id=${folder.sessionId}`,
    total: folder.sortedIds.length,
    page,
    limit,
    ids: folder.sortedIds.slice((page - 1) * limit, page * limit),
  }
}

export function lastPage(folder: ListedFolder, limit: number): number {
  return Math.max(1, Math.ceil(folder.sortedIds.length / limit))
}

/** The mixed workload: the first `pages` pages of every listed folder, in a seeded shuffled order. */
export function mixedTargets(
  folders: ListedFolder[],
  limit: number,
  seed: number,
  pages = Infinity,
): Target[] {
  const targets = folders.flatMap((folder) =>
    Array.from({ length: Math.min(pages, lastPage(folder, limit)) }, (_, i) =>
      pageTarget(folder, i + 1, limit),
    ),
  )
  let state = (seed * 2654435761) >>> 0 || 1
  for (let i = targets.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    const j = state % (i + 1)
    ;[targets[i], targets[j]] = [targets[j] as Target, targets[i] as Target]
  }
  return targets
}

interface ListBody {
  folders?: { id?: unknown }[]
  total?: unknown
  page?: unknown
  limit?: unknown
}

/** null when the body is the exact answer to the target, else what is wrong with it. */
export function checkBody(target: Target, body: string): string | null {
  let parsed: ListBody
  try {
    parsed = JSON.parse(body) as ListBody
  } catch {
    return `body is not JSON: ${body.slice(0, 120)}`
  }
  if (parsed.total !== target.total) return `total ${String(parsed.total)}, expected ${target.total}`
  if (parsed.page !== target.page) return `page ${String(parsed.page)}, expected ${target.page}`
  if (parsed.limit !== target.limit) return `limit ${String(parsed.limit)}, expected ${target.limit}`
  const ids = (parsed.folders ?? []).map((f) => f.id)
  if (ids.length !== target.ids.length)
    return `${ids.length} folders on the page, expected ${target.ids.length}`
  const at = ids.findIndex((id, i) => id !== target.ids[i])
  if (at !== -1) return `folder ${at} of the page is ${String(ids[at])}, expected ${target.ids[at]}`
  return null
}
