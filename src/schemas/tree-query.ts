import { Type, type Static } from '@sinclair/typebox'
import { DEFAULT_CHANGES_LIMIT, MAX_CHANGES_LIMIT, ChangesQuery } from './changes-query.js'
import { ListFoldersQuery, POSITIVE_INT32_PATTERN } from './list-folders-query.js'

// Apart from the body's schema (tree.ts), which the client and the browser build import:
// the query's patterns come from server modules that need Node.

/** Query of GET /v1/folders/tree: values stay strings, as for the other endpoints. */
export const TreeQuery = Type.Object(
  {
    root: Type.Optional(
      Type.String({
        pattern: ListFoldersQuery.properties.folder_id.pattern,
        description: 'The folder whose subtree is followed (not the folder itself). Absent: the root.',
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        pattern: ChangesQuery.properties.cursor.pattern,
        description:
          'Tree cursor, exactly as an earlier answer of this endpoint gave it, for the same user and root. Absent: start a new download.',
      }),
    ),
    limit: Type.Optional(
      Type.String({
        pattern: POSITIVE_INT32_PATTERN,
        description: `Most entries in one answer (decimal digits, 1 or more). Default ${DEFAULT_CHANGES_LIMIT}; above ${MAX_CHANGES_LIMIT} it is clamped to ${MAX_CHANGES_LIMIT}.`,
        examples: ['100'],
      }),
    ),
    wait: ChangesQuery.properties.wait,
  },
  { additionalProperties: true },
)

export type TreeQueryString = Static<typeof TreeQuery>
