import fc from 'fast-check'

/**
 * The property's random input, abstract: data sets (users, sessions, folder trees, files)
 * and requests (cookie, parent, paging, extra parameters, a write before it) as picks that
 * data.ts and requests.ts turn into concrete records and HTTP requests.
 */

interface GenUser {
  name: string
  avatar: string | null
  frozen: boolean
  upperId: boolean
}

type Expiry = 'never' | 'past' | 'future'

export interface GenSession {
  userPick: number
  expiry: Expiry
  /** ms before or after the real clock, for past and future */
  distanceMs: number
  upperId: boolean
}

export interface GenFolder {
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

export interface GenBulk {
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

export type GenCookie =
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

export type GenNumber =
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

const rawNameArb: fc.Arbitrary<string> = fc
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
