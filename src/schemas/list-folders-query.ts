import { Type, type Static } from '@sinclair/typebox'
import { UUID_PATTERN } from '../ids.js'

/**
 * Query of GET /v1/folders (docs/api.md, "Query parameters"). The values stay strings so that the
 * pattern sees exactly what the client sent: numeric coercion would accept `+1`, ` 1`,
 * `1e2` and `0x10`, which the contract refuses. A repeated parameter arrives as an array
 * and fails `type: string`.
 */

/** Decimal digits only (leading zeros allowed), value 1 to 2147483647. */
export const POSITIVE_INT32_PATTERN =
  '^0*(?:[1-9][0-9]{0,8}|1[0-9]{9}|20[0-9]{8}|21[0-3][0-9]{7}|214[0-6][0-9]{6}|2147[0-3][0-9]{5}' +
  '|21474[0-7][0-9]{4}|214748[0-2][0-9]{3}|2147483[0-5][0-9]{2}|21474836[0-3][0-9]|214748364[0-7])$'

/** The largest page number accepted, and so the largest a link may carry. */
export const MAX_PAGE = 2147483647
export const MAX_LIMIT = 100
export const DEFAULT_LIMIT = 50

export const ListFoldersQuery = Type.Object(
  {
    folder_id: Type.Optional(
      Type.String({
        pattern: UUID_PATTERN,
        description: 'Parent folder (UUID, any letter case). Absent: the root.',
      }),
    ),
    page: Type.Optional(
      Type.String({
        pattern: POSITIVE_INT32_PATTERN,
        description: 'Page number from 1 (decimal digits, at most 2147483647). Default 1.',
        examples: ['1'],
      }),
    ),
    limit: Type.Optional(
      Type.String({
        pattern: POSITIVE_INT32_PATTERN,
        description: `Items per page (decimal digits, 1 or more). Default ${DEFAULT_LIMIT}; above ${MAX_LIMIT} it is clamped to ${MAX_LIMIT}.`,
        examples: ['50'],
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_-]{1,256}$',
        description:
          "Continuation token, exactly as the service wrote it into the `next` or `prev` link of an earlier answer: the page right after (or before) that page's boundary, found without skipping rows and stable while others write. Opaque; bound to the user and the folder it was made for.",
      }),
    ),
  },
  { additionalProperties: true },
)

export type ListFoldersQueryString = Static<typeof ListFoldersQuery>

/** Human wording of each parameter's rule, for the 400 `detail`. */
export const PARAMETER_RULES = {
  folder_id: 'must be a UUID in 8-4-4-4-12 hex form, given once',
  page: 'must be a whole number from 1 to 2147483647 in decimal digits, given once',
  limit: 'must be a whole number of at least 1 in decimal digits, given once',
  cursor:
    'must be a continuation token exactly as this service wrote it into a Link header, for the same user and folder, given once',
  /** GET /v1/folders/changes only */
  wait: 'must be a whole number of seconds from 0 to 60 in decimal digits, given once',
  /** GET /v1/folders/tree only */
  root: 'must be a UUID in 8-4-4-4-12 hex form, given once',
} as const satisfies Record<string, string>
