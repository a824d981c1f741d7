/**
 * A small in-memory reference model of GET /v1/folders, written from the API reference and
 * docs/api.md only (the endpoint's rules, not the data model): it shares no code with src/ (no schema, no regex, no sort),
 * so a property test that compares the service with it checks the service against the
 * documents rather than against itself.
 *
 * The model answers with the status, the problem code, and for a 200 the whole body the
 * service must send (every field of every folder, in order).
 */

import { compareNatural } from './natural-rule.js'

export interface ModelUser {
  id: string
  username: string
  avatar_url: string | null
  /** internal: never in an answer */
  email: string | null
  /** internal: never in an answer */
  password_hash: string | null
  is_suspended: boolean
}

export interface ModelSession {
  id: string
  user_id: string
  /** epoch ms; null: never expires */
  expires_at: number | null
}

export interface ModelFolder {
  id: string
  /** as stored: trimmed */
  name: string
  folder_id: string | null
  owner_id: string
  is_deleted: boolean
  created_at: number
  updated_at: number
}

export interface ModelState {
  users: Map<string, ModelUser>
  sessions: Map<string, ModelSession>
  folders: Map<string, ModelFolder>
}

export function emptyModel(): ModelState {
  return { users: new Map(), sessions: new Map(), folders: new Map() }
}

export interface ModelRequest {
  /** the Cookie header, or undefined for none */
  cookie: string | undefined
  /** the raw query string, without `?` */
  query: string
}

export interface ModelFolderBody {
  id: string
  name: string
  folder_id: string | null
  owner: { id: string; username: string; avatar_url: string | null }
  created_at: string
  updated_at: string
}

export interface ModelListBody {
  folders: ModelFolderBody[]
  total: number
  page: number
  limit: number
}

export type ModelAnswer =
  | { status: 200; body: ModelListBody }
  | {
      status: 400
      code: 'INVALID_INPUT'
      /** the parameters that are malformed; `detail` names one */ params: string[]
    }
  | { status: 401; code: 'UNAUTHORIZED' }
  | { status: 403; code: 'FROZEN_ACCOUNT' }
  | { status: 404; code: 'NOT_FOUND' }

const HEX = '0123456789abcdefABCDEF'

/** docs/api.md "Query parameters" and "Authentication": 8-4-4-4-12 hex digits, any letter case, nothing else. */
export function isModelUuid(text: string): boolean {
  if (text.length !== 36) return false
  for (let i = 0; i < 36; i++) {
    const c = text[i] as string
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== '-') return false
    } else if (!HEX.includes(c)) return false
  }
  return true
}

/**
 * docs/api.md "Authentication": the first `session_id` pair of the Cookie header. Pairs are separated by `;`,
 * names and values trimmed of spaces. The generator never sends quoted or percent-encoded
 * values, which cookie parsers treat in their own ways; the fuzz suite covers those.
 */
export function modelSessionCookie(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=')
    if (eq < 0) continue
    if (pair.slice(0, eq).trim() === 'session_id') return pair.slice(eq + 1).trim()
  }
  return undefined
}

function decodeComponent(text: string): string {
  const spaced = text.split('+').join(' ')
  try {
    return decodeURIComponent(spaced)
  } catch {
    return spaced
  }
}

/** URL query semantics: `&`-separated pairs, `+` is a space, percent-decoded names and values. */
export function modelQueryParams(query: string): Map<string, string[]> {
  const params = new Map<string, string[]>()
  for (const piece of query.split('&')) {
    if (piece === '') continue
    const eq = piece.indexOf('=')
    const name = decodeComponent(eq < 0 ? piece : piece.slice(0, eq))
    const value = eq < 0 ? '' : decodeComponent(piece.slice(eq + 1))
    if (eq === 0) continue
    params.set(name, [...(params.get(name) ?? []), value])
  }
  return params
}

const INT32_MAX = 2_147_483_647n

/** docs/api.md "Query parameters": decimal digits only, value 1 to 2147483647; otherwise undefined. */
function positiveInt32(text: string): number | undefined {
  if (text === '') return undefined
  for (const c of text) if (c < '0' || c > '9') return undefined
  const value = BigInt(text)
  return value >= 1n && value <= INT32_MAX ? Number(value) : undefined
}

/** UTF-8 byte order is Unicode code point order (docs/api.md "Order"), whatever JS's UTF-16 sort says. */
export function byCodePoint(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

/** docs/api.md "Order": name by code point, then created_at, then id; a total order. */
export function contractOrder(a: ModelFolder, b: ModelFolder): number {
  const byName = byCodePoint(a.name, b.name)
  if (byName !== 0) return byName
  if (a.created_at !== b.created_at) return a.created_at < b.created_at ? -1 : 1
  return a.id === b.id ? 0 : a.id < b.id ? -1 : 1
}

/** docs/api.md "Natural order", by the rule as test/helpers/data/natural-rule.ts restates it. */
export function naturalOrder(a: ModelFolder, b: ModelFolder): number {
  return compareNatural(a.name, b.name) || contractOrder(a, b)
}

/** The live children of `parentId` (null: the root) owned by `ownerId`, in contract order. */
export function modelChildren(
  state: ModelState,
  ownerId: string,
  parentId: string | null,
  order: (a: ModelFolder, b: ModelFolder) => number = contractOrder,
): ModelFolder[] {
  const children: ModelFolder[] = []
  for (const folder of state.folders.values()) {
    if (folder.owner_id === ownerId && folder.folder_id === parentId && !folder.is_deleted)
      children.push(folder)
  }
  return children.sort(order)
}

function isoMs(ms: number): string {
  return new Date(ms).toISOString()
}

/** What the service must answer to `request` at instant `now` (epoch ms). */
export function modelAnswer(state: ModelState, request: ModelRequest, now: number): ModelAnswer {
  // 1. Authentication.
  const cookie = modelSessionCookie(request.cookie)
  if (cookie === undefined || !isModelUuid(cookie)) return { status: 401, code: 'UNAUTHORIZED' }
  const session = state.sessions.get(cookie.toLowerCase())
  if (session === undefined || (session.expires_at !== null && session.expires_at <= now)) {
    return { status: 401, code: 'UNAUTHORIZED' }
  }
  const user = state.users.get(session.user_id)
  if (user === undefined) return { status: 401, code: 'UNAUTHORIZED' }
  // 2. Account state.
  if (user.is_suspended) return { status: 403, code: 'FROZEN_ACCOUNT' }
  // 3. Input.
  const params = modelQueryParams(request.query)
  const bad: string[] = []
  const single = (name: string): string | undefined | null => {
    const values = params.get(name)
    if (values === undefined) return undefined
    return values.length === 1 ? values[0] : null
  }
  const folderText = single('folder_id')
  const pageText = single('page')
  const limitText = single('limit')
  const orderText = single('order')
  if (folderText === null || (folderText !== undefined && !isModelUuid(folderText))) bad.push('folder_id')
  const page = pageText === undefined ? 1 : pageText === null ? undefined : positiveInt32(pageText)
  if (page === undefined) bad.push('page')
  const limitGiven = limitText === undefined ? 50 : limitText === null ? undefined : positiveInt32(limitText)
  if (limitGiven === undefined) bad.push('limit')
  // The model makes no continuation tokens, so any `cursor` it is shown is one the service
  // did not make (or a repeated one): 400. Valid tokens are tested in the cursor suite.
  if (params.has('cursor')) bad.push('cursor')
  if (orderText === null || (orderText !== undefined && orderText !== 'name' && orderText !== 'name_natural'))
    bad.push('order')
  if (bad.length > 0 || page === undefined || limitGiven === undefined) {
    return { status: 400, code: 'INVALID_INPUT', params: bad }
  }
  const limit = Math.min(limitGiven, 100)
  // 4. Parent lookup: missing, foreign and deleted are one answer.
  const parentId = folderText === undefined || folderText === null ? null : folderText.toLowerCase()
  if (parentId !== null) {
    const parent = state.folders.get(parentId)
    if (parent === undefined || parent.owner_id !== user.id || parent.is_deleted) {
      return { status: 404, code: 'NOT_FOUND' }
    }
  }
  const all = modelChildren(
    state,
    user.id,
    parentId,
    orderText === 'name_natural' ? naturalOrder : contractOrder,
  )
  const start = (page - 1) * limit
  const owner = { id: user.id, username: user.username, avatar_url: user.avatar_url }
  return {
    status: 200,
    body: {
      folders: all.slice(start, start + limit).map((f) => ({
        id: f.id,
        name: f.name,
        folder_id: f.folder_id,
        owner,
        created_at: isoMs(f.created_at),
        updated_at: isoMs(f.updated_at),
      })),
      total: all.length,
      page,
      limit,
    },
  }
}
