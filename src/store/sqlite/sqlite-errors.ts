import { StoreUnavailableError } from '../store.js'

/**
 * Which better-sqlite3 failures mean "the database cannot be used right now" (HTTP 503,
 * StoreUnavailableError) rather than "this statement is wrong" (propagated as is): the
 * counterpart of postgres-errors.ts.
 */

/** SQLite result codes that mean "the database is not usable right now", not a bad query. */
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|FULL|NOTADB|CORRUPT|READONLY)/

function isSqliteError(error: unknown): error is Error & { code: string } {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string'
}

/** Driver errors become typed errors at the adapter boundary. */
export function translate(error: unknown): Error {
  if (isSqliteError(error) && UNAVAILABLE_CODES.test(error.code)) {
    return new StoreUnavailableError(`SQLite: ${error.message}`, { cause: error })
  }
  return error instanceof Error ? error : new Error(String(error))
}
