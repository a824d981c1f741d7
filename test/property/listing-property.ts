import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import fc from 'fast-check'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { appOver } from '../helpers/fixtures.js'
import { validateImport } from '../../src/import/validate-import.js'
import type { Store } from '../../src/store/store.js'
import type { Backend } from '../helpers/backends.js'
import { insertLiveFolder, openRawSql, type RawSql } from '../helpers/raw-sql.js'
import {
  emptyModel,
  modelAnswer,
  type ModelAnswer,
  type ModelFolder,
  type ModelRequest,
  type ModelSession,
  type ModelState,
  type ModelUser,
} from '../helpers/model.js'

/**
 * Model-based property test of GET /v1/folders: random data sets loaded through the import
 * path (validateImport + Store.importData), random requests through app.inject, and every
 * answer compared with test/helpers/model.ts: status, problem code, and for a 200 the whole
 * body (ids, order, names, owners, timestamps, total, page, limit).
 *
 * Cost choice: one database per backend per property run. Each fast-check case imports a
 * fresh data set (new ids and usernames, made unique by a per-case prefix) into that same
 * database and checks a batch of requests against it. Earlier cases' data stays, so every
 * case also runs among many other users' folders that must never show; the model knows only
 * the current case, which is right because everything earlier belongs to other users (404
 * as a parent, never listed). The database is replaced every `recycleEvery` cases so long
 * runs stay bounded. Shrinking re-imports under new ids, so it works unchanged.
 */

// ---------------------------------------------------------------- generated (abstract) data

interface GenUser {
  name: string
  avatar: string | null
  frozen: boolean
  upperId: boolean
}

type Expiry = 'never' | 'past' | 'future'

interface GenSession {
  userPick: number
  expiry: Expiry
  /** ms before or after the real clock, for past and future */
  distanceMs: number
  upperId: boolean
}

interface GenFolder {
  ownerPick: number
  /** index among earlier folders of the same owner; null: root */
  parentPick: number | null
  rawName: string
  /** index into the data set's shared names (same-name siblings); null: rawName */
  namePick: number | null
  deleted: boolean
  /** index into the data set's instants, or a literal instant; null: omitted (now) */
  created: { pick: number } | { at: number } | null
  /** extra ms after created_at; null: omitted */
  updatedAfter: number | null
  /** timestamp spelling: minutes of UTC offset and letter case */
  offsetMinutes: number
  lowerCase: boolean
  /** decides the id's place among ties */
  idRank: number
  upperId: boolean
  /** where the record goes in the import document */
  docKey: number
}

interface GenFile {
  ownerPick: number
  folderPick: number | null
  name: string
  deleted: boolean
  withId: boolean
}

interface GenBulk {
  parentPick: number | null
  ownerPick: number
  count: number
  names: string[]
  deletedEvery: number
}

export interface GenDataSet {
  users: GenUser[]
  sessions: GenSession[]
  folders: GenFolder[]
  files: GenFile[]
  instants: number[]
  /** raw names several folders share (also differing only in trimmed whitespace) */
  names: string[]
  bulk: GenBulk | null
}

type GenCookie =
  | { kind: 'none' }
  | {
      kind: 'session'
      pick: number
      /** prefer a live session of a user who is not frozen, when the data set has one */
      usable: boolean
      upper: boolean
      form: 'plain' | 'amid' | 'dupFirst' | 'dupSecond' | 'tight'
    }
  | { kind: 'unknown'; uuid: string }
  | { kind: 'garbage'; value: string }
  | { kind: 'otherCookiesOnly' }
  | { kind: 'wrongName'; pick: number; name: string }

type GenParent =
  | { kind: 'absent' }
  | { kind: 'own'; pick: number; upper: boolean }
  /** the session user's parent (or root) with the most live children: pagination */
  | { kind: 'busiest'; upper: boolean }
  | { kind: 'any'; pick: number; upper: boolean }
  | { kind: 'unknown'; uuid: string }
  | { kind: 'malformed'; value: string }
  | { kind: 'twice'; pick: number }

type GenNumber =
  | { kind: 'absent' }
  | { kind: 'valid'; value: number; zeros: number }
  | { kind: 'invalid'; text: string }
  | { kind: 'twice'; a: number; b: number }

export interface GenRequest {
  cookie: GenCookie
  parent: GenParent
  page: GenNumber
  limit: GenNumber
  extra: [string, string][]
  /** sort keys of the parameters: their order in the query string */
  order: number[]
  encodeNames: boolean
  /** walk every page from 1 to one past the last instead of asking `page` */
  walk: boolean
  /** a write made through the Store (as the CLI makes it) before the request, or null */
  action: GenAction | null
}

/** Writes of the Store that change what the listing shows: the model mirrors each. */
export type GenAction =
  | { kind: 'deleteFolder'; pick: number }
  | { kind: 'freeze' | 'unfreeze'; pick: number }
  | { kind: 'revokeSession'; pick: number }
  | GenRawWrite

/**
 * Writes made with plain SQL through a second connection (as another service or a console
 * makes them), which only the database's own triggers can make the cached listings notice.
 */
export type GenRawWrite =
  | { kind: 'rawInsert'; pick: number; parentPick: number | null; namePick: number }
  | { kind: 'rawRename'; pick: number; namePick: number }
  | { kind: 'rawMove'; pick: number; parentPick: number | null }
  | { kind: 'rawDelete' | 'rawUndelete'; pick: number }
  | { kind: 'rawRenameUser'; pick: number }

// ---------------------------------------------------------------- arbitraries

const WHITESPACE = ['', ' ', '  ', '\t', '\n', '\r\n', '\u00a0', '\u3000', '\ufeff', '\u2003']

/** Names that sort differently by code point, by UTF-16 unit, by locale and by case. */
const NAME_POOL = [
  'a',
  'A',
  'b',
  'B',
  'Docs',
  'docs',
  'DOCS',
  'Émile',
  'E\u0301mile',
  'Zeta',
  'zeta',
  '😀',
  '😀 smile',
  '\uFF21',
  '\uFFFD',
  '\uFFEE',
  '𝔘nicode',
  'ß',
  'ss',
  '日本',
  '中文',
  '0',
  '00',
  '9',
  '10',
  '_',
  '-',
  '~',
  '.',
  'a b',
  'a\u0001b',
  '\u007f',
  'x'.repeat(255),
  '😀'.repeat(255),
  'é'.repeat(255),
]

function validName(raw: string): boolean {
  const trimmed = raw.trim()
  return trimmed.length > 0 && !raw.includes('\u0000') && [...trimmed].length <= 255
}

const baseName = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...NAME_POOL) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 240, maxLength: 255 }) },
)

export const rawNameArb: fc.Arbitrary<string> = fc
  .tuple(fc.constantFrom(...WHITESPACE), baseName, fc.constantFrom(...WHITESPACE))
  .map(([l, n, r]) => `${l}${n}${r}`)
  .filter(validName)

const MIN_INSTANT = Date.parse('2000-01-01T00:00:00.000Z')
const MAX_INSTANT = Date.parse('2099-12-31T23:59:59.999Z')
const instantArb = fc.integer({ min: MIN_INSTANT, max: MAX_INSTANT })

const userArb: fc.Arbitrary<GenUser> = fc.record({
  name: fc.oneof(
    fc.constantFrom('alice', 'Bob', 'émile', '日本', '😀'),
    fc.string({ minLength: 1, maxLength: 8 }),
  ),
  avatar: fc.option(fc.webUrl(), { nil: null }),
  frozen: fc.nat({ max: 4 }).map((n) => n === 0),
  upperId: fc.boolean(),
})

const sessionArb: fc.Arbitrary<GenSession> = fc.record({
  userPick: fc.nat(),
  expiry: fc.constantFrom<Expiry>('never', 'past', 'future', 'future'),
  distanceMs: fc.integer({ min: 3_600_000, max: 10 * 365 * 86_400_000 }),
  upperId: fc.boolean(),
})

const folderArb: fc.Arbitrary<GenFolder> = fc.record({
  ownerPick: fc.nat(),
  parentPick: fc.option(fc.nat(), { nil: null, freq: 3 }),
  rawName: rawNameArb,
  namePick: fc.option(fc.nat(), { nil: null, freq: 2 }),
  deleted: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
  created: fc.oneof(
    { weight: 6, arbitrary: fc.record({ pick: fc.nat() }) },
    { weight: 2, arbitrary: fc.record({ at: instantArb }) },
    { weight: 1, arbitrary: fc.constant(null) },
  ),
  updatedAfter: fc.option(fc.integer({ min: 0, max: 86_400_000 }), { nil: null }),
  offsetMinutes: fc.constantFrom(0, 0, 0, 60, -480, 330, 765, -59),
  lowerCase: fc.boolean(),
  idRank: fc.nat({ max: 0xffff }),
  upperId: fc.boolean(),
  docKey: fc.nat(),
})

const fileArb: fc.Arbitrary<GenFile> = fc.record({
  ownerPick: fc.nat(),
  folderPick: fc.option(fc.nat(), { nil: null }),
  name: rawNameArb,
  deleted: fc.boolean(),
  withId: fc.boolean(),
})

const bulkArb: fc.Arbitrary<GenBulk | null> = fc.oneof(
  { weight: 5, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.record({
      parentPick: fc.option(fc.nat(), { nil: null }),
      ownerPick: fc.nat(),
      count: fc.integer({ min: 90, max: 230 }),
      names: fc.array(rawNameArb, { minLength: 1, maxLength: 8 }),
      deletedEvery: fc.integer({ min: 3, max: 20 }),
    }),
  },
)

export const dataSetArb: fc.Arbitrary<GenDataSet> = fc.record({
  users: fc.array(userArb, { minLength: 1, maxLength: 5 }),
  sessions: fc.array(sessionArb, { minLength: 1, maxLength: 10 }),
  folders: fc.array(folderArb, { maxLength: 60, size: 'medium' }),
  files: fc.array(fileArb, { maxLength: 6 }),
  instants: fc.array(instantArb, { minLength: 1, maxLength: 4 }),
  names: fc.array(rawNameArb, { minLength: 1, maxLength: 5 }),
  bulk: bulkArb,
})

/** Cookie values that are not a UUID (docs/api.md "Authentication": 401). No `%` or quotes: see modelSessionCookie. */
const garbageCookie = fc.oneof(
  fc.constantFrom(
    '',
    'abc',
    'null',
    '0',
    '{00000000-0000-4000-8000-000000000000}',
    '00000000-0000-4000-8000-00000000000g',
    '00000000-0000-4000-8000-0000000000000',
    '000000000000400080000000000000000000',
    '00000000_0000_4000_8000_000000000000',
    'urn:uuid:00000000-0000-4000-8000-000000000000',
    "' OR 1=1 --",
  ),
  fc.string({ unit: 'grapheme-ascii', maxLength: 40 }).filter((s) => !/[;%"\\]/.test(s) && s.trim() === s),
)

const cookieArb: fc.Arbitrary<GenCookie> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 40,
    arbitrary: fc.record({
      kind: fc.constant('session' as const),
      pick: fc.nat(),
      usable: fc.nat({ max: 2 }).map((n) => n > 0),
      upper: fc.boolean(),
      form: fc.oneof(
        { weight: 6, arbitrary: fc.constant('plain' as const) },
        { weight: 2, arbitrary: fc.constantFrom('amid' as const, 'dupFirst' as const, 'tight' as const) },
        { weight: 1, arbitrary: fc.constant('dupSecond' as const) },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unknown' as const), uuid: fc.uuid() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('garbage' as const), value: garbageCookie }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'otherCookiesOnly' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('wrongName' as const),
      pick: fc.nat(),
      name: fc.constantFrom('Session_ID', 'session-id', 'sessionid', 'session_id_', 'xsession_id'),
    }),
  },
)

const malformedUuid = fc.oneof(
  fc.constantFrom(
    '',
    'root',
    'null',
    '0',
    '{00000000-0000-4000-8000-000000000000}',
    '00000000-0000-4000-8000-00000000000g',
    '00000000000040008000000000000000',
    ' 00000000-0000-4000-8000-000000000000',
    '00000000-0000-4000-8000-000000000000 ',
    "1' OR '1'='1",
    '../../etc/passwd',
  ),
  fc.string({ maxLength: 40 }),
  fc.uuid().map((u) => `${u}x`),
)

const parentArb: fc.Arbitrary<GenParent> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'absent' as const }) },
  {
    weight: 8,
    arbitrary: fc.record({ kind: fc.constant('own' as const), pick: fc.nat(), upper: fc.boolean() }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('busiest' as const), upper: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('any' as const), pick: fc.nat(), upper: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unknown' as const), uuid: fc.uuid() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('malformed' as const), value: malformedUuid }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('twice' as const), pick: fc.nat() }) },
)

const invalidNumber = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '00',
    '-1',
    '1.5',
    '1.0',
    'abc',
    '+1',
    ' 1',
    '1 ',
    '1e2',
    '0x10',
    '0o7',
    '2147483648',
    '99999999999999999999',
    '１',
    'Infinity',
    'NaN',
    '1,2',
  ),
  fc.string({ maxLength: 12 }),
)

function numberArb(small: number): fc.Arbitrary<GenNumber> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant({ kind: 'absent' as const }) },
    {
      weight: 10,
      arbitrary: fc.record({
        kind: fc.constant('valid' as const),
        value: fc.oneof(
          { weight: 8, arbitrary: fc.integer({ min: 1, max: small }) },
          { weight: 2, arbitrary: fc.integer({ min: 1, max: 150 }) },
          { weight: 1, arbitrary: fc.constantFrom(100, 101, 2_147_483_647, 2_147_483_646, 1_000_000) },
        ),
        zeros: fc.oneof(
          { weight: 6, arbitrary: fc.constant(0) },
          { weight: 1, arbitrary: fc.integer({ min: 1, max: 3 }) },
        ),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('invalid' as const), text: invalidNumber }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('twice' as const),
        a: fc.integer({ min: 1, max: 3 }),
        b: fc.integer({ min: 1, max: 3 }),
      }),
    },
  )
}

const rawWriteArb: fc.Arbitrary<GenRawWrite> = fc.oneof(
  fc.record({
    kind: fc.constant('rawInsert' as const),
    pick: fc.nat(),
    parentPick: fc.option(fc.nat()),
    namePick: fc.nat(),
  }),
  fc.record({ kind: fc.constant('rawRename' as const), pick: fc.nat(), namePick: fc.nat() }),
  fc.record({ kind: fc.constant('rawMove' as const), pick: fc.nat(), parentPick: fc.option(fc.nat()) }),
  fc.record({ kind: fc.constantFrom('rawDelete' as const, 'rawUndelete' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('rawRenameUser' as const), pick: fc.nat() }),
)

export const requestArb: fc.Arbitrary<GenRequest> = fc.record({
  cookie: cookieArb,
  parent: parentArb,
  page: numberArb(6),
  limit: numberArb(8),
  extra: fc.array(
    fc.tuple(
      fc.constantFrom('Page', 'LIMIT', 'folder', 'sort', 'owner_id', 'page[]', 'limit[a]', 'x'),
      fc.string({ maxLength: 8 }),
    ),
    { maxLength: 2 },
  ),
  order: fc.array(fc.nat(), { minLength: 8, maxLength: 8 }),
  encodeNames: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
  walk: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false))),
  action: fc.oneof(
    { weight: 12, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: rawWriteArb },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constantFrom(
          'deleteFolder' as const,
          'deleteFolder' as const,
          'freeze' as const,
          'unfreeze' as const,
          'revokeSession' as const,
        ),
        pick: fc.nat(),
      }),
    },
  ),
})

// ---------------------------------------------------------------- concrete data

export interface Concrete {
  doc: {
    users: Record<string, unknown>[]
    sessions: Record<string, unknown>[]
    folders: Record<string, unknown>[]
    files: Record<string, unknown>[]
  }
  model: ModelState
  /** the `now` given to validateImport (omitted timestamps) */
  importNow: number
  userIds: string[]
  sessionIds: string[]
  /** folder ids in generation order */
  folderIds: string[]
}

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0').slice(-width)

/** Spells an instant the way RFC 3339 allows: any offset, either letter case. */
function spell(ms: number, offsetMinutes: number, lowerCase: boolean): string {
  const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 23)
  const abs = Math.abs(offsetMinutes)
  const zone =
    offsetMinutes === 0
      ? 'Z'
      : `${offsetMinutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`
  const text = `${local}${zone}`
  return lowerCase ? text.toLowerCase() : text
}

const maybeUpper = (id: string, upper: boolean) => (upper ? id.toUpperCase() : id)

/** What the steps below share while they turn one generated data set into a concrete one. */
interface Draft {
  gen: GenDataSet
  /** 8 hex digits that start every id of the case */
  prefix: string
  realNow: number
  /** the `now` given to validateImport: omitted timestamps become this */
  importNow: number
  model: ModelState
  doc: Concrete['doc']
  userIds: string[]
  sessionIds: string[]
  /** in generation order */
  folders: DraftFolder[]
}

interface DraftFolder {
  gen: GenFolder
  model: ModelFolder
}

/** The user a generated pick refers to (picks wrap around the users). */
function userAt(d: Draft, pick: number): string {
  return d.userIds[pick % d.userIds.length] as string
}

function addUsers(d: Draft): void {
  d.gen.users.forEach((u, i) => {
    const id = `${d.prefix}-0000-4000-8000-${hex(i, 12)}`
    const user: ModelUser = {
      id,
      username: `${u.name}#${d.prefix}-${i}`,
      avatar_url: u.avatar,
      email: `${d.prefix}${i}@private.example`,
      password_hash: `$argon2id$secret-${d.prefix}-${i}`,
      is_suspended: u.frozen,
    }
    d.model.users.set(id, user)
    d.doc.users.push({
      id: maybeUpper(id, u.upperId),
      username: user.username,
      email: user.email,
      avatar_url: user.avatar_url,
      password_hash: user.password_hash,
      is_suspended: user.is_suspended,
    })
    d.userIds.push(id)
  })
}

/** When a session expires: never, or a distance before or after the real clock. */
function sessionExpiry(s: GenSession, realNow: number): number | null {
  if (s.expiry === 'never') return null
  return s.expiry === 'past' ? realNow - s.distanceMs : realNow + s.distanceMs
}

function addSessions(d: Draft): void {
  d.gen.sessions.forEach((s, i) => {
    const id = `${d.prefix}-0000-4000-9000-${hex(i, 12)}`
    const expires = sessionExpiry(s, d.realNow)
    const session: ModelSession = { id, user_id: userAt(d, s.userPick), expires_at: expires }
    d.model.sessions.set(id, session)
    d.doc.sessions.push({
      id: maybeUpper(id, s.upperId),
      user_id: session.user_id,
      expires_at: expires === null ? null : new Date(expires).toISOString(),
    })
    d.sessionIds.push(id)
  })
}

/** The name as written in the import document: its own, or one of the names folders share. */
function rawNameOf(d: Draft, g: GenFolder): string {
  return g.namePick === null ? g.rawName : (d.gen.names[g.namePick % d.gen.names.length] as string)
}

/** created_at: the import's `now` when omitted, else a shared instant or a literal one. */
function createdAt(d: Draft, g: GenFolder): number {
  if (g.created === null) return d.importNow
  return 'pick' in g.created
    ? (d.gen.instants[g.created.pick % d.gen.instants.length] as number)
    : g.created.at
}

function addFolder(d: Draft, g: GenFolder, id: string, parent: string | null): void {
  const created = createdAt(d, g)
  const folder: ModelFolder = {
    id,
    name: rawNameOf(d, g).trim(),
    folder_id: parent,
    owner_id: userAt(d, g.ownerPick),
    is_deleted: g.deleted,
    created_at: created,
    updated_at: g.created === null ? d.importNow : created + (g.updatedAfter ?? 0),
  }
  d.folders.push({ gen: g, model: folder })
  d.model.folders.set(id, folder)
}

/** A folder of `owner` added so far, or null (the root) when there is none or none is asked for. */
function earlierFolder(d: Draft, owner: string, pick: number | null): string | null {
  const candidates = d.folders.filter((f) => f.model.owner_id === owner)
  if (pick === null || candidates.length === 0) return null
  return (candidates[pick % candidates.length] as DraftFolder).model.id
}

function addGeneratedFolders(d: Draft): void {
  d.gen.folders.forEach((g, i) => {
    const parent = earlierFolder(d, userAt(d, g.ownerPick), g.parentPick)
    addFolder(d, g, `${d.prefix}-${hex(g.idRank, 4)}-4000-a000-${hex(i, 12)}`, parent)
  })
}

/** The j-th child of the bulk parent, as if it had been generated like the others. */
function bulkChild(b: GenBulk, ownerPick: number, j: number): GenFolder {
  return {
    ownerPick,
    parentPick: null,
    rawName: b.names[j % b.names.length] as string,
    namePick: null,
    deleted: j % b.deletedEvery === 0,
    created: { pick: j },
    updatedAfter: j,
    offsetMinutes: 0,
    lowerCase: false,
    idRank: (j * 7919) % 0x10000,
    upperId: false,
    docKey: j,
  }
}

/** Many children of one parent: several pages, clamping at 100, runs of equal names. */
function addBulkChildren(d: Draft, b: GenBulk): void {
  const ownerPick = b.ownerPick % d.userIds.length
  const parent = earlierFolder(d, userAt(d, ownerPick), b.parentPick)
  for (let j = 0; j < b.count; j++) {
    const g = bulkChild(b, ownerPick, j)
    addFolder(d, g, `${d.prefix}-${hex(g.idRank, 4)}-4000-b000-${hex(j, 12)}`, parent)
  }
}

/** A folder as the import document spells it: ids in either case, instants at any offset. */
function folderRecord(d: Draft, f: DraftFolder): Record<string, unknown> {
  const record: Record<string, unknown> = {
    id: maybeUpper(f.model.id, f.gen.upperId),
    name: rawNameOf(d, f.gen),
    folder_id: f.model.folder_id === null ? null : maybeUpper(f.model.folder_id, f.gen.upperId),
    owner_id: f.model.owner_id,
    is_deleted: f.model.is_deleted,
  }
  if (f.gen.created !== null) {
    record.created_at = spell(f.model.created_at, f.gen.offsetMinutes, f.gen.lowerCase)
    // docs/api.md "Import format" says omitted timestamps default to now; an omitted updated_at
    // next to a given created_at is not generated, as the import takes created_at for it.
    record.updated_at = spell(f.model.updated_at, 0, false)
  }
  return record
}

/** Children may come before their parents in the file (docs/api.md "Import format"): order by docKey. */
function writeFolders(d: Draft): void {
  const inDocOrder = d.folders
    .map((f, i) => ({ f, key: f.gen.docKey * 10_000 + i }))
    .sort((a, b) => a.key - b.key)
  for (const { f } of inDocOrder) d.doc.folders.push(folderRecord(d, f))
}

/** Files, each in one of its owner's folders or at the root. */
function writeFiles(d: Draft): void {
  d.gen.files.forEach((g, i) => {
    const owner = userAt(d, g.ownerPick)
    const own = d.folders.filter((f) => f.model.owner_id === owner)
    const parent =
      g.folderPick === null || own.length === 0
        ? null
        : (own[g.folderPick % own.length] as DraftFolder).model.id
    const record: Record<string, unknown> = {
      name: g.name,
      folder_id: parent,
      owner_id: owner,
      size: i * 100,
      is_deleted: g.deleted,
    }
    if (g.withId) record.id = `${d.prefix}-0000-4000-c000-${hex(i, 12)}`
    d.doc.files.push(record)
  })
}

/**
 * Turns a generated data set into an import document and the model's state. `prefix`
 * (8 hex digits, unique per case) starts every id, so cases never collide in one database.
 */
export function concretise(gen: GenDataSet, prefix: string, realNow: number): Concrete {
  const d: Draft = {
    gen,
    prefix,
    realNow,
    importNow: realNow - 5_000,
    model: emptyModel(),
    doc: { users: [], sessions: [], folders: [], files: [] },
    userIds: [],
    sessionIds: [],
    folders: [],
  }
  addUsers(d)
  addSessions(d)
  addGeneratedFolders(d)
  if (gen.bulk !== null) addBulkChildren(d, gen.bulk)
  writeFolders(d)
  writeFiles(d)
  const { doc, model, importNow, userIds, sessionIds } = d
  return { doc, model, importNow, userIds, sessionIds, folderIds: d.folders.map((f) => f.model.id) }
}

// ---------------------------------------------------------------- concrete requests

/** The session a `session` cookie names: any, or (usable) one that authenticates if there is one. */
function pickSession(c: Concrete, cookie: { pick: number; usable: boolean }): string {
  const now = Date.now()
  const usable = c.sessionIds.filter((id) => {
    const s = c.model.sessions.get(id)
    const user = s === undefined ? undefined : c.model.users.get(s.user_id)
    return s !== undefined && (s.expires_at === null || s.expires_at > now) && user?.is_suspended === false
  })
  const from = cookie.usable && usable.length > 0 ? usable : c.sessionIds
  return from[cookie.pick % from.length] as string
}

function sessionUserId(c: Concrete, cookie: GenCookie): string | undefined {
  if (cookie.kind !== 'session') return undefined
  return c.model.sessions.get(pickSession(c, cookie))?.user_id
}

function cookieHeader(c: Concrete, cookie: GenCookie): string | undefined {
  switch (cookie.kind) {
    case 'none':
      return undefined
    case 'session': {
      const id = maybeUpper(pickSession(c, cookie), cookie.upper)
      switch (cookie.form) {
        case 'plain':
          return `session_id=${id}`
        case 'amid':
          return `theme=dark; session_id=${id}; lang=fr`
        case 'dupFirst':
          return `session_id=${id}; session_id=not-a-uuid`
        case 'dupSecond':
          return `session_id=not-a-uuid; session_id=${id}`
        case 'tight':
          return `a=1;session_id=${id};b=2`
      }
      break
    }
    case 'unknown':
      return `session_id=${cookie.uuid}`
    case 'garbage':
      return `session_id=${cookie.value}`
    case 'otherCookiesOnly':
      return 'theme=dark; sid=1'
    case 'wrongName':
      return `${cookie.name}=${c.sessionIds[cookie.pick % c.sessionIds.length] as string}`
  }
  return undefined
}

function parentParams(c: Concrete, r: GenRequest): [string, string][] {
  const p = r.parent
  const folderAt = (ids: string[], pick: number) => ids[pick % ids.length]
  switch (p.kind) {
    case 'absent':
      return []
    case 'own': {
      const owner = sessionUserId(c, r.cookie)
      const own = c.folderIds.filter((id) => c.model.folders.get(id)?.owner_id === owner)
      const id = folderAt(own.length > 0 ? own : c.folderIds, p.pick)
      return id === undefined ? [] : [['folder_id', maybeUpper(id, p.upper)]]
    }
    case 'busiest': {
      const owner = sessionUserId(c, r.cookie)
      const counts = new Map<string | null, number>()
      for (const f of c.model.folders.values()) {
        if (f.owner_id === owner && !f.is_deleted) counts.set(f.folder_id, (counts.get(f.folder_id) ?? 0) + 1)
      }
      let best: string | null = null
      for (const [parent, n] of counts) if (n > (counts.get(best) ?? 0)) best = parent
      return best === null ? [] : [['folder_id', maybeUpper(best, p.upper)]]
    }
    case 'any': {
      const id = folderAt(c.folderIds, p.pick)
      return id === undefined ? [] : [['folder_id', maybeUpper(id, p.upper)]]
    }
    case 'unknown':
      return [['folder_id', p.uuid]]
    case 'malformed':
      return [['folder_id', p.value]]
    case 'twice': {
      const id = folderAt(c.folderIds, p.pick) ?? '00000000-0000-4000-8000-000000000000'
      return [
        ['folder_id', id],
        ['folder_id', id],
      ]
    }
  }
}

function numberParams(name: string, n: GenNumber): [string, string][] {
  switch (n.kind) {
    case 'absent':
      return []
    case 'valid':
      return [[name, `${'0'.repeat(n.zeros)}${n.value}`]]
    case 'invalid':
      return [[name, n.text]]
    case 'twice':
      return [
        [name, String(n.a)],
        [name, String(n.b)],
      ]
  }
}

/** `%`-encodes every character of a parameter name: the same name once decoded. */
const encodeName = (name: string) =>
  [...Buffer.from(name, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('')

function queryString(pairs: [string, string][], r: GenRequest): string {
  const keyed = pairs.map((pair, i) => ({ pair, key: (r.order[i % r.order.length] ?? 0) * 100 + i }))
  keyed.sort((a, b) => a.key - b.key)
  return keyed
    .map(
      ({ pair: [name, value] }) =>
        `${r.encodeNames ? encodeName(name) : encodeURIComponent(name)}=${encodeURIComponent(value)}`,
    )
    .join('&')
}

// ---------------------------------------------------------------- the check

export interface CheckStats {
  cases: number
  requests: number
  byStatus: Map<number, number>
  /** 200 answers with a non-empty page after the first one */
  laterPages: number
  /** 200 answers whose page holds same-name siblings */
  tiedNames: number
  /** 200 answers whose limit was clamped to 100 */
  clamped: number
  /** writes between requests: Store (delete, freeze, unfreeze, revoke) and plain SQL */
  writes: number
  /** listing reads served by a read replica (a backend with one) and by the primary */
  replicaReads: number
  primaryReads: number
}

export function newStats(): CheckStats {
  return {
    cases: 0,
    requests: 0,
    byStatus: new Map(),
    laterPages: 0,
    tiedNames: 0,
    clamped: 0,
    writes: 0,
    replicaReads: 0,
    primaryReads: 0,
  }
}

const PROBLEM_FIELDS = ['code', 'detail', 'request_id', 'status', 'title', 'type']

function describe(req: ModelRequest, res: LightMyRequestResponse, expected: ModelAnswer): string {
  return [
    `request: cookie=${JSON.stringify(req.cookie)} query=${JSON.stringify(req.query)}`,
    `expected: ${JSON.stringify(expected).slice(0, 4000)}`,
    `actual: ${res.statusCode} ${res.payload.slice(0, 4000)}`,
  ].join('\n')
}

/** Compares one answer of the service with the model's, field by field. */
export function assertMatchesModel(
  req: ModelRequest,
  res: LightMyRequestResponse,
  expected: ModelAnswer,
): void {
  const context = describe(req, res, expected)
  assert.equal(res.statusCode, expected.status, context)
  if (expected.status === 200) {
    assert.equal(res.headers['content-type'], 'application/json; charset=utf-8', context)
    assert.deepStrictEqual(JSON.parse(res.payload), expected.body, context)
    return
  }
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, context)
  const body = JSON.parse(res.payload) as Record<string, unknown>
  assert.deepEqual(Object.keys(body).sort(), PROBLEM_FIELDS, context)
  assert.equal(body.status, expected.status, context)
  assert.equal(body.code, expected.code, context)
  assert.equal(body.type, 'about:blank', context)
  assert.equal(body.title, STATUS_CODES[expected.status], context)
  assert.equal(body.request_id, res.headers['x-request-id'], context)
  if (expected.status === 400) {
    const detail = String(body.detail)
    assert.ok(
      expected.params.some((p) => detail.includes(`'${p}'`)),
      `400 detail should name one of ${expected.params.join(', ')}\n${context}`,
    )
  }
  if (expected.status === 401) {
    assert.equal(
      res.headers['www-authenticate'],
      'Cookie realm="folder-service", cookie-name="session_id"',
      context,
    )
  }
}

function record(stats: CheckStats, expected: ModelAnswer, pageOf: number): void {
  stats.requests++
  stats.byStatus.set(expected.status, (stats.byStatus.get(expected.status) ?? 0) + 1)
  if (expected.status !== 200) return
  const { folders, limit } = expected.body
  if (pageOf > 1 && folders.length > 0) stats.laterPages++
  if (limit === 100 && folders.length === 100) stats.clamped++
  const names = folders.map((f) => f.name)
  if (new Set(names).size < names.length) stats.tiedNames++
}

async function send(app: FastifyInstance, req: ModelRequest): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'GET',
    url: req.query === '' ? '/v1/folders' : `/v1/folders?${req.query}`,
    headers: req.cookie === undefined ? {} : { cookie: req.cookie },
  })
}

/** Applies a write through the Store (or plain SQL) and to the model; checks the Store's own answer. */
async function applyAction(db: TargetDb, c: Concrete, action: GenAction, stats: CheckStats): Promise<void> {
  const { store } = db
  const now = Date.now()
  const pick = <T>(items: T[]): T | undefined => items[action.pick % Math.max(items.length, 1)]
  switch (action.kind) {
    case 'rawInsert':
    case 'rawRename':
    case 'rawMove':
    case 'rawDelete':
    case 'rawUndelete':
    case 'rawRenameUser':
      if (!(await applyRawWrite(db.sql, c, action))) return
      break
    case 'deleteFolder': {
      const id = pick(c.folderIds)
      if (id === undefined) return
      const folder = c.model.folders.get(id) as ModelFolder
      const changed = await store.markFolderDeleted(id, now)
      assert.equal(
        changed,
        !folder.is_deleted,
        `markFolderDeleted(${id}) on a folder with is_deleted=${folder.is_deleted}`,
      )
      if (changed) c.model.folders.set(id, { ...folder, is_deleted: true, updated_at: now })
      break
    }
    case 'freeze':
    case 'unfreeze': {
      const id = pick(c.userIds) as string
      assert.equal(await store.setUserSuspended(id, action.kind === 'freeze', now), true)
      const user = c.model.users.get(id) as ModelUser
      c.model.users.set(id, { ...user, is_suspended: action.kind === 'freeze' })
      break
    }
    case 'revokeSession': {
      const id = pick(c.sessionIds) as string
      assert.equal(await store.deleteSession(id), c.model.sessions.has(id), `deleteSession(${id})`)
      c.model.sessions.delete(id)
      break
    }
  }
  stats.writes++
}

/** Names a raw write may give: they sort apart by code point, case and composition. */
const RAW_NAMES = ['new', 'New', 'Docs', 'zz top', '😀 raw', 'E\u0301mile', 'Émile', 'a']

/**
 * Applies one plain-SQL write and mirrors it in the model; false when the data set has
 * nothing it could apply to. Each statement is its own transaction, as another service's
 * would be; parents stay within one owner (the schema's same-owner rule).
 */
async function applyRawWrite(sql: RawSql, c: Concrete, w: GenRawWrite): Promise<boolean> {
  const folders = c.model.folders
  const at = <T>(items: T[], n: number): T | undefined => items[n % Math.max(items.length, 1)]
  const ownFolders = (owner: string) => c.folderIds.filter((id) => folders.get(id)?.owner_id === owner)
  switch (w.kind) {
    case 'rawInsert': {
      const owner = at(c.userIds, w.pick) as string
      const parent = w.parentPick === null ? null : (at(ownFolders(owner), w.parentPick) ?? null)
      const id = randomUUID()
      const name = at(RAW_NAMES, w.namePick) as string
      const now = Date.now()
      await insertLiveFolder(sql, { id, name, parent, owner, at: now })
      folders.set(id, {
        id,
        name,
        folder_id: parent,
        owner_id: owner,
        is_deleted: false,
        created_at: now,
        updated_at: now,
      })
      c.folderIds.push(id)
      return true
    }
    case 'rawRename':
    case 'rawMove':
    case 'rawDelete':
    case 'rawUndelete': {
      const id = at(c.folderIds, w.pick)
      if (id === undefined) return false
      const folder = folders.get(id) as ModelFolder
      if (w.kind === 'rawRename') {
        const name = at(RAW_NAMES, w.namePick) as string
        await sql.run('UPDATE folders SET name = ? WHERE id = ?', name, id)
        folders.set(id, { ...folder, name })
      } else if (w.kind === 'rawMove') {
        const candidates = ownFolders(folder.owner_id).filter((other) => other !== id)
        const parent = w.parentPick === null ? null : (at(candidates, w.parentPick) ?? null)
        await sql.run('UPDATE folders SET folder_id = ? WHERE id = ?', parent, id)
        folders.set(id, { ...folder, folder_id: parent })
      } else {
        const deleted = w.kind === 'rawDelete'
        await sql.run(`UPDATE folders SET is_deleted = ${deleted ? sql.true : sql.false} WHERE id = ?`, id)
        folders.set(id, { ...folder, is_deleted: deleted })
      }
      return true
    }
    case 'rawRenameUser': {
      const id = at(c.userIds, w.pick) as string
      const username = `renamed-${randomUUID().slice(0, 8)}`
      await sql.run('UPDATE users SET username = ? WHERE id = ?', username, id)
      c.model.users.set(id, { ...(c.model.users.get(id) as ModelUser), username })
      return true
    }
  }
}

/** Sends one generated request (or walks its pages) and checks each answer. */
async function checkRequest(
  app: FastifyInstance,
  c: Concrete,
  r: GenRequest,
  stats: CheckStats,
): Promise<void> {
  const cookie = cookieHeader(c, r.cookie)
  const fixed = [...parentParams(c, r), ...numberParams('limit', r.limit), ...r.extra]
  if (!r.walk) {
    const req = { cookie, query: queryString([...fixed, ...numberParams('page', r.page)], r) }
    const expected = modelAnswer(c.model, req, Date.now())
    assertMatchesModel(req, await send(app, req), expected)
    record(stats, expected, r.page.kind === 'valid' ? r.page.value : 1)
    return
  }
  // Walk: pages 1..last+1; together they must be the whole list, each folder once, in order.
  const seen: string[] = []
  for (let page = 1; page <= 300; page++) {
    const req = { cookie, query: queryString([...fixed, ['page', String(page)]], r) }
    const expected = modelAnswer(c.model, req, Date.now())
    const res = await send(app, req)
    assertMatchesModel(req, res, expected)
    record(stats, expected, page)
    if (expected.status !== 200) return
    // A conditional repeat of a page is answered 304 with no body.
    if (page === 1) {
      const again = await app.inject({
        method: 'GET',
        url: `/v1/folders?${req.query}`,
        headers: { ...(cookie === undefined ? {} : { cookie }), 'if-none-match': String(res.headers.etag) },
      })
      assert.equal(again.statusCode, 304, describe(req, again, expected))
      assert.equal(again.payload, '')
    }
    seen.push(...expected.body.folders.map((f) => f.id))
    if (expected.body.folders.length === 0) {
      assert.equal(seen.length, expected.body.total, `pages must cover the total exactly\n${req.query}`)
      assert.equal(new Set(seen).size, seen.length, 'no folder may appear on two pages')
      return
    }
  }
}

export interface PropertyTarget {
  backend: Backend
  /** replaced every `recycleEvery` cases */
  recycleEvery?: number
}

/** A property run's database: the app's store, and a second connection for plain SQL. */
interface TargetDb {
  store: Store
  sql: RawSql
}

/** One backend's database and app, reopened every `recycleEvery` cases. */
class Target {
  private opened: (TargetDb & { app: FastifyInstance; cleanup(): Promise<void> }) | undefined
  private casesOnIt = 0
  constructor(
    private readonly backend: Backend,
    private readonly recycleEvery: number,
    private readonly stats: CheckStats,
  ) {}

  async app(): Promise<FastifyInstance> {
    if (this.opened !== undefined && this.casesOnIt >= this.recycleEvery) await this.close(this.stats)
    if (this.opened === undefined) {
      const opened = await this.backend.open()
      const app = await appOver(opened.store)
      const sql = await openRawSql(opened.url)
      this.opened = {
        store: opened.store,
        sql,
        app,
        cleanup: async () => {
          await sql.close()
          await opened.cleanup()
        },
      }
      this.casesOnIt = 0
    }
    this.casesOnIt++
    return this.opened.app
  }

  get db(): TargetDb {
    if (this.opened === undefined) throw new Error('not open')
    return this.opened
  }

  async close(stats: CheckStats): Promise<void> {
    const opened = this.opened
    this.opened = undefined
    if (opened !== undefined) {
      const routing = opened.store.readRouting?.()
      stats.primaryReads += routing?.primaryReads ?? 0
      stats.replicaReads += routing?.replicas.reduce((sum, replica) => sum + replica.reads, 0) ?? 0
      await opened.app.close()
      await opened.cleanup()
    }
  }
}

export interface RunOptions {
  numRuns: number
  /** requests per case */
  maxRequests: number
  recycleEvery?: number
  seed?: number
}

/**
 * Runs the property on one backend and returns what it exercised. A failure throws
 * fast-check's report (seed, path, the shrunk counterexample and the assertion message).
 */
export async function runListingProperty(backend: Backend, options: RunOptions): Promise<CheckStats> {
  const stats = newStats()
  const target = new Target(backend, options.recycleEvery ?? 2000, stats)
  const nonce = randomBytes(2).toString('hex')
  let counter = 0
  const property = fc.asyncProperty(
    dataSetArb,
    fc.array(requestArb, {
      minLength: Math.ceil(options.maxRequests / 2),
      maxLength: options.maxRequests,
      size: 'max',
    }),
    async (gen, requests) => {
      const app = await target.app()
      const prefix = `${nonce}${hex(counter++, 4)}`
      const concrete = concretise(gen, prefix, Date.now())
      await target.db.store.importData(validateImport(concrete.doc, concrete.importNow))
      stats.cases++
      let previous: GenRequest | undefined
      for (const r of requests) {
        if (r.action !== null) {
          await applyAction(target.db, concrete, r.action, stats)
          // The request answered just before the write is in the listing cache now: asked
          // again, it must reflect the write (a cache that missed it would answer stale).
          if (previous !== undefined) await checkRequest(app, concrete, previous, stats)
        }
        await checkRequest(app, concrete, r, stats)
        previous = r
      }
    },
  )
  const envSeed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED)
  const seed = options.seed ?? envSeed
  try {
    await fc.assert(property, {
      numRuns: options.numRuns,
      // The shrunk case's own assertion (request, expected, actual) in the report.
      includeErrorInReport: true,
      ...(seed === undefined ? {} : { seed }),
    })
  } finally {
    await target.close(stats)
  }
  return stats
}

export function summary(stats: CheckStats): string {
  const statuses = [...stats.byStatus.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([s, n]) => `${s}:${n}`)
    .join(' ')
  return (
    `${stats.cases} cases, ${stats.requests} requests (${statuses}); ` +
    `${stats.laterPages} later pages, ${stats.tiedNames} pages with same-name siblings, ${stats.clamped} clamped to 100, ` +
    `${stats.writes} writes between requests (Store and plain SQL); ` +
    `listings read on a replica: ${stats.replicaReads}, on the primary: ${stats.primaryReads}`
  )
}
