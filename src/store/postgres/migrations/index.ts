import type { SqlMigration } from '../../run-migrations.js'
import step001InitialSchema from './001-initial-schema.js'
import step002MaintainedChildCounts from './002-maintained-child-counts.js'
import step003ListingGenerations from './003-listing-generations.js'
import step004CursorKey from './004-cursor-key.js'
import step005UserBounds from './005-user-bounds.js'
import step006ChangeLog from './006-change-log.js'
import step009NaturalOrder from './009-natural-order.js'
import step010TreeLog from './010-tree-log.js'
import step011ChangeNotifications from './011-change-notifications.js'
import step012TreeWalk from './012-tree-walk.js'
import step013OwnerChildCounts from './013-owner-child-counts.js'
import step014InsertedRowCounts from './014-inserted-row-counts.js'
import step015TreeStates from './015-tree-states.js'
import step016TreeOldParents from './016-tree-old-parents.js'

/**
 * The steps of the PostgreSQL backend's schema (docs/api.md, "Data model"), in the order
 * they apply, run by postgres-migrations.ts; the twins of ../../sqlite/migrations/ by name
 * (test/unit/migration-steps.test.ts). Each step is history: one file per step, its SQL
 * written out as it ran on existing databases and never edited once released (a change is
 * a new step), so it imports no live code. Live code that needs the same SQL (the change
 * trigger function, the generation clock) keeps its own copy in change-log-sql.ts: the two
 * repeat each other on purpose, and the copy here is the one that must not change.
 *
 * Sorting matches SQLite's BINARY exactly: text that is sorted (names, usernames) is
 * declared COLLATE "C", i.e. UTF-8 byte order = code point order, whatever the database's
 * default collation; uuid order is byte order = the lower-case hex order of SQLite's TEXT
 * ids. Times are timestamptz(3): the millisecond precision the Store speaks.
 */
export const MIGRATIONS: readonly SqlMigration[] = [
  step001InitialSchema,
  step002MaintainedChildCounts,
  step003ListingGenerations,
  step004CursorKey,
  step005UserBounds,
  step006ChangeLog,
  step009NaturalOrder,
  step010TreeLog,
  step011ChangeNotifications,
  step012TreeWalk,
  step013OwnerChildCounts,
  step014InsertedRowCounts,
  step015TreeStates,
  step016TreeOldParents,
]
