import { randomBytes } from 'node:crypto'
import { withClient } from '../../harness/postgres-client.js'

// The bench's own modules take it from here; the code lives in harness/ because the replica tests use it too.
export { withClient }

/**
 * A PostgreSQL database the bench may fill and throw away. Preferred: a new database
 * created with the URL's role (CREATEDB) and dropped afterwards. Without that privilege
 * the URL's own database is used: the data set's ids are fresh UUIDs and its usernames
 * carry a run tag, so the import cannot collide, and the bench deletes its rows after.
 */

export interface BenchDatabase {
  url: string
  mode: 'fresh database' | 'in place'
  /** Drops the database, or deletes the run's users and their rows; returns a warning or null. */
  dispose(userIds: string[]): Promise<string | null>
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@')
}

/** Runs `work` on one short-lived connection to `url`. */
export async function benchDatabase(baseUrl: string): Promise<BenchDatabase> {
  const name = `folder_service_bench_${Date.now()}_${randomBytes(3).toString('hex')}`
  let created: boolean
  try {
    created = await withClient(baseUrl, async (client) => {
      try {
        await client.query(`CREATE DATABASE "${name}"`)
        return true
      } catch (error) {
        if ((error as { code?: string }).code === '42501') return false // no CREATEDB: use the URL's database
        throw error
      }
    })
  } catch (error) {
    throw new Error(`cannot use PostgreSQL at ${redact(baseUrl)}: ${(error as Error).message}`, {
      cause: error,
    })
  }

  if (created) {
    const url = new URL(baseUrl)
    url.pathname = `/${name}`
    return {
      url: url.toString(),
      mode: 'fresh database',
      dispose: async () => {
        try {
          await withClient(baseUrl, (client) =>
            client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
          )
          return null
        } catch (error) {
          return `could not drop database ${name}: ${(error as Error).message}`
        }
      },
    }
  }

  return {
    url: baseUrl,
    mode: 'in place',
    dispose: async (userIds) => {
      try {
        await withClient(baseUrl, async (client) => {
          // Table names of docs/api.md "Data model"; ids compared as text so any id column type works.
          await client.query('BEGIN')
          for (const sql of [
            'DELETE FROM sessions WHERE user_id::text = ANY($1::text[])',
            'DELETE FROM files WHERE owner_id::text = ANY($1::text[])',
            'DELETE FROM folders WHERE owner_id::text = ANY($1::text[])',
            'DELETE FROM users WHERE id::text = ANY($1::text[])',
          ]) {
            await client.query(sql, [userIds])
          }
          await client.query('COMMIT')
        })
        return null
      } catch (error) {
        return `could not delete the bench's rows from ${redact(baseUrl)}: ${(error as Error).message}`
      }
    },
  }
}

export { redact as redactUrl }
