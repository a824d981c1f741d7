import type { SqlMigration } from '../../run-migrations.js'

/**
 * The tree download's walk (src/store/tree-walk.ts) reads "the first live child of P with
 * id greater than C" once per folder sent: a seek here, where the listing index, in name
 * order, would read every child of P.
 */
export default {
  name: '012-tree-walk',
  sql: `
      CREATE INDEX folders_tree ON folders (owner_id, folder_id, id) WHERE NOT is_deleted;
    `,
} satisfies SqlMigration
