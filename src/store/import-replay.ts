import { LISTING_SOURCES } from './listing-sources.js'

/**
 * What an import does in place of the per-row triggers it lifts while it copies the staged
 * rows (import_users, import_folders, ...: see staged-import-checks.ts), the same on both
 * backends: the child counts once per parent and owner, and for every owner the import
 * touches a new listing generation and one 'reset' row in the change log instead of a row
 * per folder, so feed positions from before the import are expired. Each adapter names the
 * triggers it lifts and gives the few expressions that differ (ReplayDialect); the replay
 * itself is written here once.
 */

export interface ReplayDialect {
  /** SQL true when the folder row `alias` is live (not deleted) */
  live(alias: string): string
  /** an imported owner's next listing generation, as SQL over its `users` row */
  nextGeneration: string
  /** the change log row of `kind` for each user matching `where`, at the user's generation */
  logOwners(kind: 'reset', where: string): string
}

/** Every owner a listing of the import's rows belongs to: the owner column of each listing source. */
const IMPORTED_OWNERS = Object.entries(LISTING_SOURCES)
  .map(([table, source]) => `SELECT ${source.owner} AS id FROM import_${table}`)
  .join(' UNION ')

export interface ImportReplay {
  /**
   * (folder_id, n): the live staged children of each staged parent. Joined to a folder as it
   * is copied, this is its child_count: its children are all in the file (a stored folder
   * cannot name a new one as its parent, the checks refuse it).
   */
  stagedChildCounts: string
  /** The statements to run once every staged row is copied, in order. */
  afterCopy: string
}

export function importReplay(dialect: ReplayDialect): ImportReplay {
  const liveChildren = (onlyStoredParents: boolean) => `
    SELECT s.folder_id, count(*) AS n FROM import_folders AS s
     WHERE ${dialect.live('s')} AND s.folder_id IS NOT NULL
       ${onlyStoredParents ? 'AND NOT EXISTS (SELECT 1 FROM import_folders AS i WHERE i.id = s.folder_id)' : ''}
     GROUP BY s.folder_id`
  const imported = 'id IN (SELECT id FROM import_owners)'
  return {
    stagedChildCounts: liveChildren(false),
    afterCopy: `
      -- Stored parents gain their new live children once per parent ...
      UPDATE folders AS p SET child_count = p.child_count + c.n
        FROM (${liveChildren(true)}) AS c
       WHERE p.id = c.folder_id;
      -- ... and owners their new live root folders once per owner.
      UPDATE users AS u SET root_folder_count = u.root_folder_count + c.n
        FROM (SELECT s.owner_id, count(*) AS n FROM import_folders AS s
               WHERE ${dialect.live('s')} AND s.folder_id IS NULL GROUP BY s.owner_id) AS c
       WHERE u.id = c.owner_id;
      CREATE TEMP TABLE import_owners AS ${IMPORTED_OWNERS};
      UPDATE users SET listing_generation = ${dialect.nextGeneration} WHERE ${imported};
      ${dialect.logOwners('reset', imported)}
      DROP TABLE import_owners;
    `,
  }
}
