import { quoted } from '../printable.js'
import type { Static } from '@sinclair/typebox'
import { TypeCompiler, ValueErrorType, type ValueError } from '@sinclair/typebox/compiler'
import { newId, normaliseUuid } from '../ids.js'
import { parseTimestamp } from '../time.js'
import {
  ImportError,
  type FileRecord,
  type FolderRecord,
  type ImportData,
  type ImportItem,
  type ImportKind,
  type SessionRecord,
  type UserRecord,
} from '../store/store.js'
import { ImportFile, ImportFileShape, ImportFolder, ImportSession, ImportUser } from './import-schema.js'

/**
 * Turns one record of a data file into a stored row, or throws ImportError naming it:
 * shape, UUIDs, names, timestamps, everything that can be decided from the record alone,
 * once, for both backends. Whatever spans records (duplicate ids and usernames, owners,
 * parents, cycles) is decided by the database on the whole file (Store.importStream):
 * with millions of records it cannot live in JavaScript maps.
 */

const RECORD_SCHEMAS = {
  users: TypeCompiler.Compile(ImportUser),
  sessions: TypeCompiler.Compile(ImportSession),
  folders: TypeCompiler.Compile(ImportFolder),
  files: TypeCompiler.Compile(ImportFile),
}
const checkFileShape = TypeCompiler.Compile(ImportFileShape)

const IMPORT_KINDS: readonly ImportKind[] = ['users', 'sessions', 'folders', 'files']

export function isImportKind(key: unknown): key is ImportKind {
  return key === 'users' || key === 'sessions' || key === 'folders' || key === 'files'
}

const MAX_NAME_LENGTH = 255

/**
 * A UTF-16 surrogate without its pair is no character at all: each backend would store a
 * different replacement for it, and the name would not come back as given.
 */
const LONE_SURROGATE = /\p{Surrogate}/u

const MAX_USERNAME_LENGTH = 255
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/
const MAX_AVATAR_URL_LENGTH = 2048

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

/** The first schema error, in words: a union names what it accepts, a NUL is named as such. */
function describe(error: ValueError | undefined): string {
  if (error === undefined) return 'invalid'
  const accepted = (error.schema as { description?: unknown }).description
  if (error.type === ValueErrorType.Union && typeof accepted === 'string') return `must be ${accepted}`
  if (error.message.includes(String.raw`\u0000`)) return 'contains a NUL character'
  return error.message
}

/** `/name` -> `name: ...`; a fault of the record as a whole has no field. */
function shapeError(at: string, error: ValueError | undefined): ImportError {
  const field = (error?.path ?? '').split('/').slice(1).join('.')
  const what = describe(error)
  return new ImportError(at, field === '' ? what : `${field}: ${what}`)
}

function timestamp(text: string | undefined, fallback: number, at: string, field: string): number {
  if (text === undefined) return fallback
  const ms = parseTimestamp(text)
  if (ms === null)
    throw new ImportError(at, `${field}: not an RFC 3339 date-time with offset: ${quoted(text)}`)
  return ms
}

function storedName(raw: string, at: string): string {
  const result = normaliseName(raw)
  if ('reason' in result) throw new ImportError(at, result.reason)
  return result.name
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

function placedRecord(input: PlacedInput, at: string, now: number): FolderRecord {
  const created_at = timestamp(input.created_at, now, at, 'created_at')
  return {
    id: input.id === undefined ? newId() : normaliseUuid(input.id),
    name: storedName(input.name, at),
    folder_id: input.folder_id == null ? null : normaliseUuid(input.folder_id),
    owner_id: normaliseUuid(input.owner_id),
    is_deleted: input.is_deleted ?? false,
    created_at,
    updated_at: timestamp(input.updated_at, created_at, at, 'updated_at'),
  }
}

function userRecord(u: Static<typeof ImportUser>, at: string, now: number): UserRecord {
  if (LONE_SURROGATE.test(u.username)) {
    throw new ImportError(at, 'username: not well-formed Unicode (a lone surrogate)')
  }
  // The bounds the database enforces too (migration 005): every listing repeats them.
  if (CONTROL_CHARACTER.test(u.username)) throw new ImportError(at, 'username: contains a control character')
  if (codePointLength(u.username) > MAX_USERNAME_LENGTH) {
    throw new ImportError(at, `username: longer than ${MAX_USERNAME_LENGTH} characters`)
  }
  if (u.avatar_url != null && codePointLength(u.avatar_url) > MAX_AVATAR_URL_LENGTH) {
    throw new ImportError(at, `avatar_url: longer than ${MAX_AVATAR_URL_LENGTH} characters`)
  }
  const created_at = timestamp(u.created_at, now, at, 'created_at')
  return {
    id: u.id === undefined ? newId() : normaliseUuid(u.id),
    username: u.username,
    email: u.email ?? null,
    avatar_url: u.avatar_url ?? null,
    password_hash: u.password_hash ?? null,
    is_suspended: u.is_suspended ?? false,
    created_at,
    updated_at: timestamp(u.updated_at, created_at, at, 'updated_at'),
  }
}

function sessionRecord(s: Static<typeof ImportSession>, at: string, now: number): SessionRecord {
  return {
    id: s.id === undefined ? newId() : normaliseUuid(s.id),
    user_id: normaliseUuid(s.user_id),
    created_at: timestamp(s.created_at, now, at, 'created_at'),
    expires_at: s.expires_at == null ? null : timestamp(s.expires_at, now, at, 'expires_at'),
  }
}

/**
 * Record `index` of array `kind`, validated and normalised (ids lower case, names trimmed,
 * defaults applied with `now`), or ImportError naming `kind[index]`.
 */
export function validateRecord(kind: ImportKind, index: number, input: unknown, now: number): ImportItem {
  const at = `${kind}[${index}]`
  const schema = RECORD_SCHEMAS[kind]
  if (!schema.Check(input)) throw shapeError(at, schema.Errors(input).First())
  switch (kind) {
    case 'users':
      return { kind, index, row: userRecord(input as Static<typeof ImportUser>, at, now) }
    case 'sessions':
      return { kind, index, row: sessionRecord(input as Static<typeof ImportSession>, at, now) }
    case 'folders':
      return { kind, index, row: placedRecord(input as Static<typeof ImportFolder>, at, now) }
    case 'files': {
      const file = input as Static<typeof ImportFile>
      const row: FileRecord = { ...placedRecord(file, at, now), size: file.size ?? 0 }
      return { kind, index, row }
    }
  }
}

/**
 * A whole data file already in memory (seeding, administration commands, tests) as an
 * ImportData in file order. Large files go through import/read-import-file.ts instead.
 */
export function validateImport(input: unknown, now: number): ImportData {
  if (!checkFileShape.Check(input)) {
    const error = checkFileShape.Errors(input).First()
    const key = (error?.path ?? '').split('/')[1]
    throw shapeError(key === undefined || key === '' ? 'file' : key, error && { ...error, path: '' })
  }
  const data: ImportData = { users: [], sessions: [], folders: [], files: [] }
  for (const kind of IMPORT_KINDS) {
    const records = input[kind] ?? []
    for (let index = 0; index < records.length; index++) {
      const item = validateRecord(kind, index, records[index], now)
      ;(data[kind] as { at: string; row: ImportItem['row'] }[]).push({
        at: `${kind}[${index}]`,
        row: item.row,
      })
    }
  }
  return data
}
