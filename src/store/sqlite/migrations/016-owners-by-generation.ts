import type { SqlMigration } from '../../run-migrations.js'

/**
 * The owners whose listing generation moved since a generation, in one seek: SQLite's
 * commit hints (commit-hints.ts) read them after each commit another connection makes,
 * so that the feeds' watcher reads the generations of those owners alone rather than of
 * every owner it holds. PostgreSQL's NOTIFY names the owners itself.
 */
export default {
  name: '016-owners-by-generation',
  sql: `
      CREATE INDEX users_by_generation ON users (listing_generation);
    `,
} satisfies SqlMigration
