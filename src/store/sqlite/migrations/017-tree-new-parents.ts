import type { SqlMigration } from '../../run-migrations.js'

/**
 * The tree feed asks, of a folder inserted or given to the user after a cursor's position,
 * whether a new place at or before that position was already under it: an answer may end
 * between the rows of one statement that makes or gives a folder with its children, and
 * those placed before the position arrive with it only through a walk of its subtree. One
 * seek here; PostgreSQL's folder_changes_by_owner answers it already.
 */
export default {
  name: '017-tree-new-parents',
  sql: `
      CREATE INDEX folder_changes_by_new_parent ON folder_changes (owner_id, parent_id, generation)
        WHERE kind = 'folder' AND id = 1;
    `,
} satisfies SqlMigration
