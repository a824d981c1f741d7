import type { Store } from '../../../src/store/store.js'

/**
 * A Store whose every method fails, except those listed in `working` (delegated to
 * `inner`): proves which calls a route makes, and drives the database-down paths.
 */
export function failingStore(inner: Store, working: (keyof Store)[] = []): Store {
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (typeof value !== 'function' || property === 'close') return value
      // A store that is down gives no commit hints; the watcher's poll meets the failures.
      if (property === 'changeSignals') return () => null
      if (working.includes(property as keyof Store))
        return (value as (...a: unknown[]) => unknown).bind(target)
      return () => Promise.reject(new Error(`store.${String(property)} called while the database is down`))
    },
  })
}
