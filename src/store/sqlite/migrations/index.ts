import type { SqlMigration } from '../../run-migrations.js'
import step001InitialSchema from './001-initial-schema.js'
import step002MaintainedChildCounts from './002-maintained-child-counts.js'
import step003ListingGenerations from './003-listing-generations.js'
import step004CursorKey from './004-cursor-key.js'
import step005UserBounds from './005-user-bounds.js'
import step006ChangeLog from './006-change-log.js'
import step007FolderNameEncoding from './007-folder-name-encoding.js'
import step008PortableClock from './008-portable-clock.js'
import step009NaturalOrder from './009-natural-order.js'
import step010TreeLog from './010-tree-log.js'
import step012TreeWalk from './012-tree-walk.js'
import step013OwnerChildCounts from './013-owner-child-counts.js'
import step014InsertedRowCounts from './014-inserted-row-counts.js'
import step015TreeStates from './015-tree-states.js'
import step016OwnersByGeneration from './016-owners-by-generation.js'
import step017TreeNewParents from './017-tree-new-parents.js'

/**
 * The steps of the embedded backend's schema (docs/api.md, "Data model"), in the order they
 * apply, run by sqlite-migrations.ts. Each step is history: one file per step, its SQL
 * written out as it ran on existing databases and never edited once released (a change is
 * a new step), so it imports no live code. Live code that needs the same SQL (the trigger
 * bodies, the generation clock) keeps its own copy in change-log-sql.ts: the two repeat
 * each other on purpose, and the copy here is the one that must not change.
 *
 * Times are INTEGER epoch milliseconds; ids are lower-case TEXT UUIDs, whose byte order
 * equals PostgreSQL's uuid order, so the `id` tie-break sorts alike on both backends.
 */
export const MIGRATIONS: readonly SqlMigration[] = [
  step001InitialSchema,
  step002MaintainedChildCounts,
  step003ListingGenerations,
  step004CursorKey,
  step005UserBounds,
  step006ChangeLog,
  step007FolderNameEncoding,
  step008PortableClock,
  step009NaturalOrder,
  step010TreeLog,
  step012TreeWalk,
  step013OwnerChildCounts,
  step014InsertedRowCounts,
  step015TreeStates,
  step016OwnersByGeneration,
  step017TreeNewParents,
]
