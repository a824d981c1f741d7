import { validateImport } from '../../../src/import/validate-import.js'
import type { Store } from '../../../src/store/store.js'
import type { Backend } from '../databases/backends.js'
import { appOver } from './test-app.js'
import { openRawSql } from '../../../harness/raw-sql.js'

/**
 * Store wrappers that count calls, to prove which database calls a route makes (a cached
 * answer makes none), and the app over a counted store with a second connection for plain SQL.
 */

/** The store, with a count of its calls of `method`. */
export function countingCalls(store: Store, method: keyof Store): { store: Store; calls: () => number } {
  let calls = 0
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver)
      if (typeof value !== 'function') return value
      const bound = (value as (...a: unknown[]) => unknown).bind(target)
      if (prop !== method) return bound
      return (...args: unknown[]) => {
        calls++
        return bound(...args)
      }
    },
  })
  return { store: wrapped, calls: () => calls }
}

/** The store, with a count of its listFolders calls: a cached answer makes none. */
function countingReads(store: Store): { store: Store; reads: () => number } {
  const { store: wrapped, calls } = countingCalls(store, 'listFolders')
  return { store: wrapped, reads: calls }
}

/**
 * A fresh `backend` loaded with `doc`, the app over it (reads counted), and a second
 * connection for plain SQL writes: the set-up of every test that writes behind the
 * service's back and checks the next answer.
 */
export async function appWithRawSql(backend: Backend, doc: unknown, now: number) {
  const opened = await backend.open()
  await opened.store.importData(validateImport(doc, now))
  const counted = countingReads(opened.store)
  const app = await appOver(counted.store)
  const sql = await openRawSql(opened.url)
  return {
    ...opened,
    app,
    sql,
    reads: counted.reads,
    async close() {
      await app.close()
      await sql.close()
      await opened.cleanup()
    },
  }
}
