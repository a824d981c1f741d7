import { Type, type Static } from '@sinclair/typebox'
import { MAX_WAIT_SECONDS } from '../api/limits.js'
import { decimalParameter, Token } from './bounded.js'
import { MAX_CHANGES_LIMIT } from './changes-body.js'
import { ListFoldersQuery, POSITIVE_INT32, POSITIVE_INT32_PATTERN } from './list-folders-query.js'

/**
 * Query of GET /v1/folders/changes (docs/api.md "Changes"). As for the listing, values stay
 * strings so the patterns see exactly what was sent, and a repeated parameter (an array)
 * fails `type: string`.
 */

export { MAX_CHANGES_LIMIT }
export const DEFAULT_CHANGES_LIMIT = 100

export const ChangesQuery = Type.Object(
  {
    folder_id: ListFoldersQuery.properties.folder_id,
    cursor: Type.Optional(
      Token({
        description:
          'Changes cursor, exactly as an earlier answer of this endpoint or a listing\'s `rel="changes"` link gave it, for the same user and folder. Absent: start now (no changes, a fresh cursor).',
      }),
    ),
    limit: Type.Optional(
      decimalParameter(POSITIVE_INT32_PATTERN, POSITIVE_INT32, {
        description: `Most entries in one answer (decimal digits, 1 or more). Default ${DEFAULT_CHANGES_LIMIT}; above ${MAX_CHANGES_LIMIT} it is clamped to ${MAX_CHANGES_LIMIT}.`,
        examples: ['100'],
      }),
    ),
    wait: Type.Optional(
      decimalParameter(
        '^0*(?:[0-9]|[1-5][0-9]|60)$',
        { minimum: 0, maximum: MAX_WAIT_SECONDS },
        {
          description: `Seconds (0 to ${MAX_WAIT_SECONDS}) to hold the answer when nothing follows the cursor, until a change commits. Default 0.`,
          examples: ['30'],
        },
      ),
    ),
  },
  { additionalProperties: true },
)

export type ChangesQueryString = Static<typeof ChangesQuery>
