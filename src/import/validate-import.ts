import { TypeCompiler, ValueErrorType, type ValueError } from '@sinclair/typebox/compiler'
import { newId, normaliseUuid } from '../ids.js'
import { parseTimestamp } from '../time.js'
import {
  ImportError,
  type FileRecord,
  type FolderRecord,
  type ImportData,
  type ImportEntry,
} from '../store/store.js'
import { ImportFileSchema, type ImportFileData } from './import-schema.js'

/**
 * Turns a parsed data file into an {@link ImportData}, or throws ImportError naming the
 * first record at fault. Everything that can be decided without the database is decided
 * here, once, for both backends; what needs the database (ids or usernames already stored,
 * owners and parents outside the file) is the adapter's part of Store.importData.
 */

const checkShape = TypeCompiler.Compile(ImportFileSchema)

export const MAX_NAME_LENGTH = 255

/**
 * A UTF-16 surrogate without its pair is no character at all: each backend would store a
 * different replacement for it, and the name would not come back as given.
 */
const LONE_SURROGATE = /\p{Surrogate}/u

/** Characters as the databases count them (code points): a surrogate pair is one. */
function codePointLength(text: string): number {
  let count = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0xdc00 || unit > 0xdfff) count++
  }
  return count
}

/**
 * A folder or file name as stored: trimmed, 1 to 255 characters (code points), no NUL
 * (PostgreSQL text cannot hold it, and both backends must accept the same names).
 * Returns the trimmed name or a reason it is refused.
 */
export function normaliseName(raw: string): { name: string } | { reason: string } {
  const name = raw.trim()
  if (name.length === 0) return { reason: 'name is empty after trimming' }
  if (name.includes('\u0000')) return { reason: 'name contains a NUL character' }
  if (LONE_SURROGATE.test(name)) return { reason: 'name is not well-formed Unicode (a lone surrogate)' }
  if (name.length > MAX_NAME_LENGTH && codePointLength(name) > MAX_NAME_LENGTH)
    return { reason: `name is longer than ${MAX_NAME_LENGTH} characters` }
  return { name }
}

/** `/folders/3/name` -> `folders[3]` and `name`. */
function locate(path: string): { at: string; field: string } {
  const parts = path.split('/').slice(1)
  if (parts.length === 0) return { at: 'file', field: '' }
  if (parts.length === 1) return { at: parts[0] ?? 'file', field: '' }
  return { at: `${parts[0]}[${parts[1]}]`, field: parts.slice(2).join('.') }
}

/** The first schema error, in words: a union names what it accepts, a NUL is named as such. */
function describe(error: ValueError | undefined): string {
  if (error === undefined) return 'invalid'
  const accepted = (error.schema as { description?: unknown }).description
  if (error.type === ValueErrorType.Union && typeof accepted === 'string') return `must be ${accepted}`
  if (error.message.includes(String.raw`\u0000`)) return 'contains a NUL character'
  return error.message
}

function checkedShape(input: unknown): ImportFileData {
  if (checkShape.Check(input)) return input
  const first = checkShape.Errors(input).First()
  const { at, field } = locate(first?.path ?? '')
  const what = describe(first)
  throw new ImportError(at, field === '' ? what : `${field}: ${what}`)
}

function timestamp(text: string | undefined, fallback: number, at: string, field: string): number {
  if (text === undefined) return fallback
  const ms = parseTimestamp(text)
  if (ms === null) throw new ImportError(at, `${field}: not an RFC 3339 date-time with offset: ${text}`)
  return ms
}

function storedName(raw: string, at: string): string {
  const result = normaliseName(raw)
  if ('reason' in result) throw new ImportError(at, result.reason)
  return result.name
}

/** Records each id once per array; a second use names both records. */
function claimId(seen: Map<string, string>, id: string, at: string): void {
  const first = seen.get(id)
  if (first !== undefined) throw new ImportError(at, `duplicate id ${id} (already used by ${first})`)
  seen.set(id, at)
}

/** What folders and files share: an id, a trimmed name, a place in the tree, an owner. */
interface PlacedInput {
  id?: string | undefined
  name: string
  folder_id?: string | null | undefined
  owner_id: string
  is_deleted?: boolean | undefined
  created_at?: string | undefined
  updated_at?: string | undefined
}

function placedRecord(input: PlacedInput, at: string, ids: Map<string, string>, now: number): FolderRecord {
  const id = input.id === undefined ? newId() : normaliseUuid(input.id)
  claimId(ids, id, at)
  const created_at = timestamp(input.created_at, now, at, 'created_at')
  return {
    id,
    name: storedName(input.name, at),
    folder_id: input.folder_id == null ? null : normaliseUuid(input.folder_id),
    owner_id: normaliseUuid(input.owner_id),
    is_deleted: input.is_deleted ?? false,
    created_at,
    updated_at: timestamp(input.updated_at, created_at, at, 'updated_at'),
  }
}

export function validateImport(input: unknown, now: number): ImportData {
  const file = checkedShape(input)

  const userIds = new Map<string, string>()
  const usernames = new Map<string, string>()
  const users = (file.users ?? []).map((u, i) => {
    const at = `users[${i}]`
    const id = u.id === undefined ? newId() : normaliseUuid(u.id)
    claimId(userIds, id, at)
    if (LONE_SURROGATE.test(u.username)) {
      throw new ImportError(at, 'username: not well-formed Unicode (a lone surrogate)')
    }
    const other = usernames.get(u.username)
    if (other !== undefined) throw new ImportError(at, `duplicate username ${u.username} (also ${other})`)
    usernames.set(u.username, at)
    const created_at = timestamp(u.created_at, now, at, 'created_at')
    return {
      at,
      row: {
        id,
        username: u.username,
        email: u.email ?? null,
        avatar_url: u.avatar_url ?? null,
        password_hash: u.password_hash ?? null,
        is_suspended: u.is_suspended ?? false,
        created_at,
        updated_at: timestamp(u.updated_at, created_at, at, 'updated_at'),
      },
    }
  })

  const sessionIds = new Map<string, string>()
  const sessions = (file.sessions ?? []).map((s, i) => {
    const at = `sessions[${i}]`
    const id = s.id === undefined ? newId() : normaliseUuid(s.id)
    claimId(sessionIds, id, at)
    return {
      at,
      row: {
        id,
        user_id: normaliseUuid(s.user_id),
        created_at: timestamp(s.created_at, now, at, 'created_at'),
        expires_at: s.expires_at == null ? null : timestamp(s.expires_at, now, at, 'expires_at'),
      },
    }
  })

  const folderIds = new Map<string, string>()
  const folders: ImportEntry<FolderRecord>[] = (file.folders ?? []).map((f, i) => {
    const at = `folders[${i}]`
    return { at, row: placedRecord(f, at, folderIds, now) }
  })

  const fileIds = new Map<string, string>()
  const files: ImportEntry<FileRecord>[] = (file.files ?? []).map((f, i) => {
    const at = `files[${i}]`
    return { at, row: { ...placedRecord(f, at, fileIds, now), size: f.size ?? 0 } }
  })

  const byId = new Map(folders.map((entry) => [entry.row.id, entry]))
  for (const entry of [...folders, ...files]) {
    const parent = entry.row.folder_id === null ? undefined : byId.get(entry.row.folder_id)
    if (parent !== undefined && parent.row.owner_id !== entry.row.owner_id) {
      throw new ImportError(entry.at, `parent folder ${parent.row.id} belongs to another owner`)
    }
  }

  return { users, sessions, folders: parentsFirst(folders, byId), files }
}

/**
 * Orders folders so that every parent defined in the file precedes its children, letting
 * adapters insert with immediate foreign-key checks. A cycle (a folder that is its own
 * ancestor) can never hang from the root, so it is refused. Iterative: a chain may be deep.
 */
function parentsFirst(
  folders: ImportEntry<FolderRecord>[],
  byId: Map<string, ImportEntry<FolderRecord>>,
): ImportEntry<FolderRecord>[] {
  // PLACED: already in `ordered`; ON_CHAIN: on the chain being walked (seen again: a cycle).
  const PLACED = 1
  const ON_CHAIN = 2
  const state = new Map<string, number>()
  const ordered: ImportEntry<FolderRecord>[] = []
  const chain: ImportEntry<FolderRecord>[] = []
  for (const start of folders) {
    let current: ImportEntry<FolderRecord> | undefined = start
    while (current !== undefined && state.get(current.row.id) !== PLACED) {
      if (state.get(current.row.id) === ON_CHAIN) {
        throw new ImportError(current.at, 'folder is its own ancestor (parent cycle)')
      }
      state.set(current.row.id, ON_CHAIN)
      chain.push(current)
      current = current.row.folder_id === null ? undefined : byId.get(current.row.folder_id)
    }
    while (chain.length > 0) {
      const entry = chain.pop() as ImportEntry<FolderRecord>
      state.set(entry.row.id, PLACED)
      ordered.push(entry)
    }
  }
  return ordered
}
