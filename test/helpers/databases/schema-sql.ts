import Database from 'better-sqlite3'
import pg from 'pg'
import { parseDatabaseUrl } from '../../../src/store/open-store.js'

/**
 * A connection that reads a table's columns and foreign keys from the database itself
 * (SQLite's PRAGMAs, PostgreSQL's catalogs) and reads and writes one column of one row by
 * plain SQL, as another writer would: what a test needs to change every column a schema
 * has, whatever columns a later migration adds. Statements use `?` placeholders; values
 * travel as the driver gives them (SQLite) or as text cast to the column's type
 * (PostgreSQL), so a value read can always be written back.
 */

export interface Column {
  name: string
  /** lower case: SQLite's declared type, PostgreSQL's information_schema data_type */
  type: string
  primaryKey: boolean
}

/** A foreign key, as pairs of (column of the referencing table, column of `table`). */
export interface ForeignKey {
  from: string
  table: string
  pairs: { from: string; to: string }[]
}

/** One column of one row: the row is found by its single-column primary key. */
export interface Cell {
  table: string
  key: { column: string; value: unknown }
  column: Column
}

export interface SchemaSql {
  readonly kind: 'sqlite' | 'postgres'
  columns(table: string): Promise<Column[]>
  /** Every foreign key of the schema. */
  foreignKeys(): Promise<ForeignKey[]>
  rows(sql: string, ...params: unknown[]): Promise<Record<string, unknown>[]>
  /** The cell's value, in a form `write` takes back. */
  read(cell: Cell): Promise<unknown>
  /** The value of `expression` (SQL over the row, `?` placeholders) in the same form. */
  evaluate(cell: Cell, expression: string, params: unknown[]): Promise<unknown>
  /** One UPDATE statement of the one cell, in its own transaction. */
  write(cell: Cell, value: unknown): Promise<void>
  close(): Promise<void>
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`

export async function openSchemaSql(url: string): Promise<SchemaSql> {
  const target = parseDatabaseUrl(url)
  return target.kind === 'sqlite' ? sqliteSchema(target.path) : postgresSchema(target.url)
}

function sqliteSchema(path: string): SchemaSql {
  const db = new Database(path, { timeout: 5000 })
  db.pragma('foreign_keys = ON')
  const all = (sql: string, params: unknown[]) => db.prepare(sql).all(...params) as Record<string, unknown>[]
  const where = (cell: Cell) => `FROM ${quote(cell.table)} WHERE ${quote(cell.key.column)} = ?`
  return {
    kind: 'sqlite',
    columns: (table) =>
      Promise.resolve(
        (db.pragma(`table_info(${quote(table)})`) as { name: string; type: string; pk: number }[]).map(
          (c) => ({ name: c.name, type: c.type.toLowerCase(), primaryKey: c.pk > 0 }),
        ),
      ),
    foreignKeys: () => {
      const tables = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")
        .pluck()
        .all() as string[]
      const keys: ForeignKey[] = []
      for (const from of tables) {
        const list = db.pragma(`foreign_key_list(${quote(from)})`) as {
          id: number
          table: string
          from: string
          to: string
        }[]
        for (const id of new Set(list.map((k) => k.id))) {
          const parts = list.filter((k) => k.id === id)
          keys.push({
            from,
            table: parts[0]?.table ?? '',
            pairs: parts.map((k) => ({ from: k.from, to: k.to })),
          })
        }
      }
      return Promise.resolve(keys)
    },
    rows: (sql, ...params) => Promise.resolve(all(sql, params)),
    read: (cell) =>
      Promise.resolve(all(`SELECT ${quote(cell.column.name)} AS v ${where(cell)}`, [cell.key.value])[0]?.v),
    evaluate: (cell, expression, params) =>
      Promise.resolve(all(`SELECT (${expression}) AS v ${where(cell)}`, [...params, cell.key.value])[0]?.v),
    // A refused write rejects, as on PostgreSQL, rather than throwing at the call.
    write: (cell, value) =>
      new Promise<void>((resolve) => {
        db.prepare(
          `UPDATE ${quote(cell.table)} SET ${quote(cell.column.name)} = ? WHERE ${quote(cell.key.column)} = ?`,
        ).run(value, cell.key.value)
        resolve()
      }),
    close: () => Promise.resolve(void db.close()),
  }
}

async function postgresSchema(url: string): Promise<SchemaSql> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const all = async (sql: string, params: unknown[]) => {
    let n = 0
    const text = sql.replace(/\?/g, () => `$${++n}`)
    return (await client.query<Record<string, unknown>>(text, params)).rows
  }
  const where = (cell: Cell) => `FROM ${quote(cell.table)} WHERE ${quote(cell.key.column)} = ?`
  // Text both ways: every type has a text form that casts back to it exactly.
  const asText = async (sql: string, params: unknown[]) => (await all(sql, params))[0]?.v ?? null
  return {
    kind: 'postgres',
    columns: async (table) => {
      const rows = await all(
        `SELECT c.column_name AS name, c.data_type AS type,
                EXISTS (SELECT 1 FROM information_schema.table_constraints AS t
                          JOIN information_schema.key_column_usage AS k
                            ON k.constraint_name = t.constraint_name AND k.table_schema = t.table_schema
                         WHERE t.constraint_type = 'PRIMARY KEY' AND t.table_schema = c.table_schema
                           AND t.table_name = c.table_name AND k.column_name = c.column_name) AS pk
           FROM information_schema.columns AS c
          WHERE c.table_schema = current_schema() AND c.table_name = ?
          ORDER BY c.ordinal_position`,
        [table],
      )
      return rows.map((r) => ({ name: String(r.name), type: String(r.type), primaryKey: r.pk === true }))
    },
    foreignKeys: async () => {
      const rows = await all(
        `SELECT c.oid::text AS id, c.conrelid::regclass::text AS "from", c.confrelid::regclass::text AS "table",
                a.attname AS from_column, r.attname AS to_column
           FROM pg_constraint AS c
           CROSS JOIN LATERAL unnest(c.conkey, c.confkey) WITH ORDINALITY AS k (from_n, to_n, i)
           JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = k.from_n
           JOIN pg_attribute AS r ON r.attrelid = c.confrelid AND r.attnum = k.to_n
          WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace
          ORDER BY c.oid, k.i`,
        [],
      )
      const keys = new Map<string, ForeignKey>()
      for (const r of rows) {
        const id = String(r.id)
        const key = keys.get(id) ?? { from: String(r.from), table: String(r.table), pairs: [] }
        key.pairs.push({ from: String(r.from_column), to: String(r.to_column) })
        keys.set(id, key)
      }
      return [...keys.values()]
    },
    rows: (sql, ...params) => all(sql, params),
    read: (cell) => asText(`SELECT ${quote(cell.column.name)}::text AS v ${where(cell)}`, [cell.key.value]),
    evaluate: (cell, expression, params) =>
      asText(`SELECT (${expression})::text AS v ${where(cell)}`, [...params, cell.key.value]),
    write: async (cell, value) => {
      await all(
        `UPDATE ${quote(cell.table)} SET ${quote(cell.column.name)} = CAST(? AS ${cell.column.type})
          WHERE ${quote(cell.key.column)} = ?`,
        [value, cell.key.value],
      )
    },
    close: () => client.end(),
  }
}
