import { quoted } from '../printable.js'
import { ImportError, type ImportData, type ImportItem, type ImportKind, type ImportSource } from './store.js'

/**
 * How an import fault found against the database is worded, the same on every backend:
 * users, scripts and the contract tests read these messages after the record's position
 * (`folders[3]: ...`).
 */
const importFaults = {
  idTaken: (id: string) => `id ${id} already exists`,
  usernameTaken: (username: string) => `username ${quoted(username)} already exists`,
  unknownUser: (userId: string) => `user ${userId} does not exist`,
  unknownOwner: (ownerId: string) => `owner ${ownerId} does not exist`,
  badParent: (folderId: string) => `parent folder ${folderId} does not exist or belongs to another owner`,
}

/**
 * The checks each adapter runs, set-based, on its staging tables, in precedence order: when
 * one record breaks several rules, the first listed is named. A check finds rows as
 * (index, value, other): `value` is the id, username or parent at fault; `other` is the
 * index of the record that used a duplicated value first.
 */
const STAGED_CHECKS = [
  'duplicateId',
  'duplicateUsername',
  'usernameTaken',
  'idTaken',
  'unknownUser',
  'unknownOwner',
  'parentOfOtherOwner',
  'badParent',
] as const

export type StagedCheck = (typeof STAGED_CHECKS)[number]

/** A staged record at fault, as a check query returns it. */
export interface StagedFault {
  /** the record's index in its array */
  seq: number
  /** the check's position in STAGED_CHECKS */
  rule: number
  value: string
  other: number | null
}

/** The checks that apply to each kind of record, in the order they are run. */
export const CHECKS_BY_KIND: Record<ImportKind, readonly StagedCheck[]> = {
  users: ['duplicateId', 'duplicateUsername', 'usernameTaken', 'idTaken'],
  sessions: ['duplicateId', 'idTaken', 'unknownUser'],
  folders: ['duplicateId', 'idTaken', 'unknownOwner', 'parentOfOtherOwner', 'badParent'],
  files: ['duplicateId', 'idTaken', 'unknownOwner', 'parentOfOtherOwner', 'badParent'],
}

export function ruleNumber(check: StagedCheck): number {
  return STAGED_CHECKS.indexOf(check)
}

/** The ImportError for the first fault (lowest index, then rule) among `faults` of `kind`. */
export function firstFault(kind: ImportKind, faults: readonly StagedFault[]): ImportError | null {
  let first: StagedFault | undefined
  for (const fault of faults) {
    if (
      first === undefined ||
      fault.seq < first.seq ||
      (fault.seq === first.seq && fault.rule < first.rule)
    ) {
      first = fault
    }
  }
  if (first === undefined) return null
  const { value, other } = first
  const at = `${kind}[${first.seq}]`
  switch (STAGED_CHECKS[first.rule]) {
    case 'duplicateId':
      return new ImportError(at, `duplicate id ${value} (already used by ${kind}[${other}])`)
    case 'duplicateUsername':
      return new ImportError(at, `duplicate username ${quoted(value)} (also users[${other}])`)
    case 'usernameTaken':
      return new ImportError(at, importFaults.usernameTaken(value))
    case 'idTaken':
      return new ImportError(at, importFaults.idTaken(value))
    case 'unknownUser':
      return new ImportError(at, importFaults.unknownUser(value))
    case 'unknownOwner':
      return new ImportError(at, importFaults.unknownOwner(value))
    case 'parentOfOtherOwner':
      return new ImportError(at, `parent folder ${value} belongs to another owner`)
    default:
      return new ImportError(at, importFaults.badParent(value))
  }
}

export function cycleFault(seq: number): ImportError {
  return new ImportError(`folders[${seq}]`, 'folder is its own ancestor (parent cycle)')
}

/** A data set held in memory as an ImportSource of one batch (positions are indexes). */
export function itemsOf(data: ImportData): ImportSource {
  const batch: ImportItem[] = [
    ...data.users.map(({ row }, index) => ({ kind: 'users' as const, index, row })),
    ...data.sessions.map(({ row }, index) => ({ kind: 'sessions' as const, index, row })),
    ...data.folders.map(({ row }, index) => ({ kind: 'folders' as const, index, row })),
    ...data.files.map(({ row }, index) => ({ kind: 'files' as const, index, row })),
  ]
  return [batch]
}
