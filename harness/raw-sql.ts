import Database from 'better-sqlite3'
import pg from 'pg'
import { parseDatabaseUrl } from '../src/store/open-store.js'

/**
 * A second connection that writes with plain SQL, as another service, another instance or
 * an operator's console would: nothing of the Store, so only what the database itself
 * maintains (counts, listing generations) can keep the service right.
 *
 * Statements are written once with `?` placeholders; the three dialect differences the
 * tests need (booleans, epoch-millisecond times, placeholders) are given as expressions.
 */
export interface RawSql {
  /** Runs one statement; `?` placeholders, numbered for PostgreSQL. */
  run(sql: string, ...params: unknown[]): Promise<void>
  /** The first column of the first row of a query (a count, say), as a number. */
  value(sql: string, ...params: unknown[]): Promise<number>
  /** A placeholder for an epoch-millisecond parameter, as the column type wants it. */
  readonly time: string
  readonly true: string
  readonly false: string
  close(): Promise<void>
}

export async function openRawSql(url: string): Promise<RawSql> {
  const target = parseDatabaseUrl(url)
  if (target.kind === 'sqlite') {
    const db = new Database(target.path, { timeout: 5000 })
    db.pragma('foreign_keys = ON')
    return {
      // A refused statement rejects, as on PostgreSQL, rather than throwing at the call.
      run: (sql, ...params) =>
        new Promise<void>((resolve) => {
          db.prepare(sql).run(...params)
          resolve()
        }),
      value: (sql, ...params) =>
        new Promise<number>((resolve) => {
          resolve(
            Number(
              db
                .prepare(sql)
                .pluck()
                .get(...params),
            ),
          )
        }),
      time: '?',
      true: '1',
      false: '0',
      close: () => Promise.resolve(void db.close()),
    }
  }
  const client = new pg.Client({ connectionString: target.url })
  await client.connect()
  const query = (sql: string, params: unknown[]) => {
    let n = 0
    return client.query<Record<string, unknown>>(
      sql.replace(/\?/g, () => `$${++n}`),
      params,
    )
  }
  return {
    run: async (sql, ...params) => {
      await query(sql, params)
    },
    value: async (sql, ...params) => Number(Object.values((await query(sql, params)).rows[0] ?? {})[0]),
    time: 'to_timestamp(?::float8 / 1000)',
    true: 'true',
    false: 'false',
    close: () => client.end(),
  }
}

/** Inserts one live folder as another writer would: one statement, its own transaction. */
export function insertLiveFolder(
  sql: RawSql,
  folder: { id: string; name: string; parent: string | null; owner: string; at: number },
): Promise<void> {
  return sql.run(
    `INSERT INTO folders (id, name, folder_id, owner_id, is_deleted, created_at, updated_at)
     VALUES (?, ?, ?, ?, ${sql.false}, ${sql.time}, ${sql.time})`,
    folder.id,
    folder.name,
    folder.parent,
    folder.owner,
    folder.at,
    folder.at,
  )
}
