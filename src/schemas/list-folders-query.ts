import { Type, type Static } from '@sinclair/typebox'
import { UUID_PATTERN } from '../ids.js'
import { LISTING_ORDERS } from '../ordering/listing-orders.js'
import { decimalParameter, Token } from './bounded.js'

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
export { DEFAULT_ORDER } from '../ordering/listing-orders.js'

/** page and limit: decimal digits, 1 to 2147483647 (limit is clamped to MAX_LIMIT after). */
export const POSITIVE_INT32 = { minimum: 1, maximum: MAX_PAGE }

export const ListFoldersQuery = Type.Object(
  {
    folder_id: Type.Optional(
      Type.String({
        pattern: UUID_PATTERN,
        maxLength: 36,
        description: 'Parent folder (UUID, any letter case). Absent: the root.',
      }),
    ),
    page: Type.Optional(
      decimalParameter(POSITIVE_INT32_PATTERN, POSITIVE_INT32, {
        description: 'Page number from 1 (decimal digits, at most 2147483647). Default 1.',
        examples: ['1'],
      }),
    ),
    limit: Type.Optional(
      decimalParameter(POSITIVE_INT32_PATTERN, POSITIVE_INT32, {
        description: `Items per page (decimal digits, 1 or more). Default ${DEFAULT_LIMIT}; above ${MAX_LIMIT} it is clamped to ${MAX_LIMIT}.`,
        examples: ['50'],
      }),
    ),
    cursor: Type.Optional(
      Token({
        description:
          "Continuation token, exactly as the service wrote it into the `next` or `prev` link of an earlier answer: the page right after (or before) that page's boundary, found without skipping rows and stable while others write. Opaque; bound to the user and the folder it was made for.",
      }),
    ),
    order: Type.Optional(
      Type.Union(
        LISTING_ORDERS.map((order) => Type.Literal(order)),
        {
          description:
            '`name` (the default): by name in Unicode code point order, then created_at, then id. `name_natural`: the order of a file manager (docs/api.md "Natural order"): case and accents set aside, numbers by value, ties broken by code point order, created_at, id. The `Link` links keep it; a cursor made in one order is refused in the other.',
          examples: ['name_natural'],
        },
      ),
    ),
  },
  { additionalProperties: true },
)

export type ListFoldersQueryString = Static<typeof ListFoldersQuery>
