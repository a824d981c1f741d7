import { Type, type Static } from '@sinclair/typebox'
import { Token } from './bounded.js'
import { ChangesQuery } from './changes-query.js'
import { ListFoldersQuery } from './list-folders-query.js'

// Apart from the body's schema (tree-body.ts), which the client and the browser build import:
// the query's patterns come from server modules that need Node.

/** Query of GET /v1/folders/tree: values stay strings, as for the other endpoints. */
export const TreeQuery = Type.Object(
  {
    root: Type.Optional(
      Type.String({
        pattern: ListFoldersQuery.properties.folder_id.pattern,
        maxLength: 36,
        description: 'The folder whose subtree is followed (not the folder itself). Absent: the root.',
      }),
    ),
    cursor: Type.Optional(
      Token({
        description:
          'Tree cursor, exactly as an earlier answer of this endpoint gave it, for the same user and root. Absent: start a new download.',
      }),
    ),
    // As the changes feed's: default 100, above 1000 clamped to 1000; wait 0 to 60 seconds.
    limit: ChangesQuery.properties.limit,
    wait: ChangesQuery.properties.wait,
  },
  { additionalProperties: true },
)

export type TreeQueryString = Static<typeof TreeQuery>
