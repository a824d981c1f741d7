import { Type, type Static } from '@sinclair/typebox'
import { UUID_PATTERN } from '../ids.js'

/**
 * The data file of `folder-service import` (docs/api.md "Import format"). Unknown keys are
 * rejected: a misspelt `parent_id` must fail loudly rather than put a tree at the root.
 */

const Uuid = Type.String({ pattern: UUID_PATTERN })
const Timestamp = Type.String({ description: 'RFC 3339 date-time with offset' })
// PostgreSQL text cannot hold NUL; refusing it here keeps both backends accepting the same data.
const Text = Type.String({ pattern: '^[^\\u0000]*$', description: 'text without NUL characters' })
const NullableString = Type.Union([Text, Type.Null()], {
  description: 'a string without NUL characters, or null',
})
const strict = { additionalProperties: false } as const

export const ImportUser = Type.Object(
  {
    id: Type.Optional(Uuid),
    // Control characters and the length bound (in code points, as the databases count) are
    // checked in validate-import.ts.
    username: Type.String({ minLength: 1, pattern: '^[^\\u0000]+$' }),
    email: Type.Optional(NullableString),
    avatar_url: Type.Optional(NullableString),
    password_hash: Type.Optional(NullableString),
    is_suspended: Type.Optional(Type.Boolean()),
    created_at: Type.Optional(Timestamp),
    updated_at: Type.Optional(Timestamp),
  },
  strict,
)

export const ImportSession = Type.Object(
  {
    id: Type.Optional(Uuid),
    user_id: Uuid,
    created_at: Type.Optional(Timestamp),
    expires_at: Type.Optional(
      Type.Union([Timestamp, Type.Null()], { description: 'an RFC 3339 date-time, or null for no expiry' }),
    ),
  },
  strict,
)

export const ImportFolder = Type.Object(
  {
    id: Type.Optional(Uuid),
    name: Type.String(),
    folder_id: Type.Optional(
      Type.Union([Uuid, Type.Null()], { description: 'a UUID, or null for the root' }),
    ),
    owner_id: Uuid,
    is_deleted: Type.Optional(Type.Boolean()),
    created_at: Type.Optional(Timestamp),
    updated_at: Type.Optional(Timestamp),
  },
  strict,
)

export const ImportFile = Type.Object(
  {
    id: Type.Optional(Uuid),
    name: Type.String(),
    folder_id: Type.Optional(
      Type.Union([Uuid, Type.Null()], { description: 'a UUID, or null for the root' }),
    ),
    owner_id: Uuid,
    size: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    is_deleted: Type.Optional(Type.Boolean()),
    created_at: Type.Optional(Timestamp),
    updated_at: Type.Optional(Timestamp),
  },
  strict,
)

/** The file around the records, each of which is checked against its own schema above. */
export const ImportFileShape = Type.Object(
  {
    users: Type.Optional(Type.Array(Type.Unknown())),
    sessions: Type.Optional(Type.Array(Type.Unknown())),
    folders: Type.Optional(Type.Array(Type.Unknown())),
    files: Type.Optional(Type.Array(Type.Unknown())),
  },
  strict,
)

/** A data file as its writer builds it (tests, seeding). */
export interface ImportFileData {
  users?: Static<typeof ImportUser>[]
  sessions?: Static<typeof ImportSession>[]
  folders?: Static<typeof ImportFolder>[]
  files?: Static<typeof ImportFile>[]
}
