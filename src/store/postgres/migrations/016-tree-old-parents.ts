import type { SqlMigration } from '../../run-migrations.js'

/**
 * The tree feed asks "does an old state after the position name this folder as its parent"
 * (for each folder and ancestor of an answer) and "which old states after the position were
 * children of this parent" (the walk). On folder_changes_by_owner those read every row under
 * the parent after the position, its inserts too (place 1): 20,000 uploads into one folder
 * behind a cursor were read for each answer. This index holds the old states alone (the
 * twin of SQLite's folder_changes_by_old_parent, migration 015), so the first is one seek.
 */
export default {
  name: '016-tree-old-parents',
  sql: `
      CREATE INDEX folder_changes_by_old_parent ON folder_changes (owner_id, parent_id, generation, id)
        WHERE kind = 'folder' AND place = 0;
    `,
} satisfies SqlMigration
