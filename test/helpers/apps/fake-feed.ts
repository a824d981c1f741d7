import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Folder, FolderChange } from 'folder-service/client'
import { problemBody, sendJson, type ScriptedServer } from './scripted-server.js'

/**
 * A small model of GET /v1/folders and GET /v1/folders/changes for one folder, speaking the
 * contract's JSON, status codes and Link headers (docs/api.md), for client behaviour tests
 * that need a feed they can steer: writes at chosen moments, a 410 on demand, a held request.
 * Cursors are `c<n>`: every log entry after the n-th. Offset pages only.
 */
export class FakeFeed {
  readonly folders = new Map<string, Folder>()
  /** the changes in commit order; entry i has position i + 1 */
  readonly log: FolderChange[] = []
  /** cursors below this position are answered 410 CURSOR_EXPIRED (the changes before it are gone) */
  oldestKept = 0
  /** called before each listing page is answered (a write "while paging") */
  beforePage: (page: number) => void = () => undefined
  /** answers instead of the model, one per changes request, while any are queued */
  readonly scriptedChanges: ((response: ServerResponse) => void)[] = []
  readonly #waiters = new Set<() => void>()

  constructor(readonly folderId: string) {}

  /** Wires this model into a scripted server. */
  serve(server: ScriptedServer): void {
    server.handle = (request, response) => this.#handle(request, response)
  }

  folder(id: string, name: string, at = '2026-01-01T00:00:00.000Z'): Folder {
    return {
      id,
      name,
      folder_id: this.folderId,
      owner: { id: 'a0000000-0000-4000-8000-000000000001', username: 'owner', avatar_url: null },
      created_at: at,
      updated_at: at,
    }
  }

  upsert(folder: Folder): void {
    this.folders.set(folder.id, folder)
    this.#commit({ type: 'upsert', folder })
  }

  remove(id: string): void {
    this.folders.delete(id)
    this.#commit({ type: 'remove', id })
  }

  /** The listing as the service sorts it: by name (code point), created_at, id. */
  sorted(): Folder[] {
    const key = (f: Folder) => [...f.name].map((c) => c.codePointAt(0) ?? 0)
    return [...this.folders.values()].sort((a, b) => {
      const [x, y] = [key(a), key(b)]
      for (let i = 0; i < Math.min(x.length, y.length); i++)
        if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0)
      return x.length - y.length || a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id)
    })
  }

  #commit(change: FolderChange): void {
    this.log.push(change)
    // Writes made in one synchronous run are one commit: held requests wake after it.
    setImmediate(() => {
      for (const wake of this.#waiters) wake()
      this.#waiters.clear()
    })
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://fake')
    if (url.pathname === '/v1/folders') this.#list(url, response)
    else if (url.pathname === '/v1/folders/changes') this.#changes(url, response)
    else sendJson(response, 404, problemBody(404, 'NOT_FOUND'))
  }

  #list(url: URL, response: ServerResponse): void {
    const page = Number(url.searchParams.get('page') ?? '1')
    const limit = Number(url.searchParams.get('limit') ?? '50')
    const cursor = `c${this.log.length}`
    this.beforePage(page)
    const all = this.sorted()
    const last = Math.max(1, Math.ceil(all.length / limit))
    const base = `/v1/folders?folder_id=${this.folderId}&`
    const links = [`<${base}page=1&limit=${limit}>; rel="first"`]
    if (page < last) links.push(`<${base}page=${page + 1}&limit=${limit}>; rel="next"`)
    links.push(`<${base}page=${last}&limit=${limit}>; rel="last"`)
    // the point the answer was read at: taken before beforePage's write, like a snapshot
    links.push(`</v1/folders/changes?folder_id=${this.folderId}&cursor=${cursor}>; rel="changes"`)
    sendJson(
      response,
      200,
      { folders: all.slice((page - 1) * limit, page * limit), total: all.length, page, limit },
      { link: links.join(', ') },
    )
  }

  #changes(url: URL, response: ServerResponse): void {
    const scripted = this.scriptedChanges.shift()
    if (scripted !== undefined) {
      scripted(response)
      return
    }
    const cursor = url.searchParams.get('cursor')
    const from = cursor === null ? this.log.length : Number(cursor.slice(1))
    const limit = Number(url.searchParams.get('limit') ?? '100')
    const wait = Number(url.searchParams.get('wait') ?? '0')
    const answer = () => {
      // checked when answering, so a held request sees a reset made while it waited
      if (from < this.oldestKept) {
        sendJson(response, 410, problemBody(410, 'CURSOR_EXPIRED'))
        return
      }
      const entries = this.log.slice(from, from + limit)
      // one entry per folder, its latest, as the service collapses them
      const key = (e: FolderChange) =>
        e.type === 'remove' ? e.id : e.type === 'upsert' ? e.folder.id : 'owner'
      const lastAt = new Map(entries.map((entry, i) => [key(entry), i]))
      const changes = entries.filter((entry, i) => lastAt.get(key(entry)) === i)
      const next = from + entries.length
      sendJson(response, 200, { changes, cursor: `c${next}`, has_more: next < this.log.length })
    }
    if (this.log.length > from || wait === 0 || from < this.oldestKept) {
      answer()
      return
    }
    const timer = setTimeout(() => {
      this.#waiters.delete(wake)
      answer()
    }, wait * 1000)
    const wake = () => {
      clearTimeout(timer)
      answer()
    }
    this.#waiters.add(wake)
    response.on('close', () => {
      clearTimeout(timer)
      this.#waiters.delete(wake)
    })
  }
}
