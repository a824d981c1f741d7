import {
  emptyModel,
  type ModelFolder,
  type ModelSession,
  type ModelState,
  type ModelUser,
} from '../../helpers/fixtures/model.js'
import type { GenDataSet, GenFolder, GenSession, GenBulk } from './generators.js'

/** Turns a generated data set into an import document and the model of what it holds. */

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

export const hex = (n: number, width: number) => n.toString(16).padStart(width, '0').slice(-width)

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

export const maybeUpper = (id: string, upper: boolean) => (upper ? id.toUpperCase() : id)

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
