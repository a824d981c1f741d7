import type { Folder, FolderServiceClient } from '../client/index.js'

/**
 * Names of folders for the breadcrumbs, only ever as the service listed them: every listing
 * the page shows is remembered (in sessionStorage, so a reload keeps them), and a folder of
 * the trail not seen yet (a bookmark opened in a new tab) is looked up in its parent's
 * listing. Nothing from the URL is shown.
 */

const KEY = 'folder-names'
/** Enough for any trail a person walks; the oldest are forgotten first. */
const KEPT = 2000
/** Pages of a parent read to find one name (100 folders each). */
const LOOKUP_PAGES = 20

const names = new Map<string, string>(load())

function load(): [string, string][] {
  try {
    const stored: unknown = JSON.parse(sessionStorage.getItem(KEY) ?? '[]')
    return Array.isArray(stored) ? (stored as [string, string][]) : []
  } catch {
    return [] // storage disabled or unreadable: names are looked up again
  }
}

export function rememberNames(folders: readonly Pick<Folder, 'id' | 'name'>[]): void {
  for (const { id, name } of folders) {
    names.delete(id)
    names.set(id, name)
  }
  while (names.size > KEPT) names.delete(names.keys().next().value ?? '')
  try {
    sessionStorage.setItem(KEY, JSON.stringify([...names]))
  } catch {
    // storage full or disabled: the names stay in memory
  }
}

/** Forgets every name (signed out: the next user must not see the last one's names). */
export function forgetNames(): void {
  names.clear()
  try {
    sessionStorage.removeItem(KEY)
  } catch {
    // storage disabled: nothing was kept
  }
}

export function folderName(id: string): string | undefined {
  return names.get(id)
}

/**
 * Looks up the names of the trail not known yet, each in its parent's listing; true when
 * any was found. Errors are left to the listing itself to report.
 */
export async function lookUpNames(
  client: FolderServiceClient,
  trail: readonly string[],
  signal: AbortSignal,
): Promise<boolean> {
  let found = false
  for (const [i, id] of trail.entries()) {
    if (names.has(id)) continue
    let pages = 0
    try {
      for await (const page of client.pages(trail[i - 1] ?? null, { limit: 100, signal })) {
        rememberNames(page.body.folders)
        if (names.has(id) || ++pages >= LOOKUP_PAGES) break
      }
    } catch {
      if (signal.aborted) return found
    }
    found ||= names.has(id)
  }
  return found
}
