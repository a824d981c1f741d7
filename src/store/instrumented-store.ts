import { performance } from 'node:perf_hooks'

/**
 * A store that times every call of the store it wraps and reports it to `observe` (the
 * HTTP layer feeds a Prometheus histogram). A decorator, so the adapters stay free of
 * metrics code and both backends are measured the same way; generic, so a method added to
 * the Store is measured with no edit here.
 *
 * The wrapper's prototype is the wrapped store, so every property reads through to it;
 * each method is an own property of the wrapper that looks the store's method up at each
 * call, so a store whose methods change (a test's fault injector) is timed as it is now.
 * A method's promise is returned as it is, with the timing hung beside it: the caller
 * waits no extra turn of the microtask queue.
 */

export type Outcome = 'ok' | 'error'
export type ObserveStoreCall = (operation: string, outcome: Outcome, seconds: number) => void

/** The names of the methods of `store`: its own and its prototypes', up to Object's. */
function methodNames(store: object): Set<string> {
  const names = new Set<string>()
  for (let level: object | null = store; level !== null && level !== Object.prototype;) {
    for (const name of Object.getOwnPropertyNames(level)) {
      const descriptor = Object.getOwnPropertyDescriptor(level, name)
      if (name !== 'constructor' && typeof descriptor?.value === 'function') names.add(name)
    }
    level = Object.getPrototypeOf(level) as object | null
  }
  return names
}

/** Every method of `inner` that returns a promise, timed from the call to its settling. */
export function instrumented<S extends object>(inner: S, observe: ObserveStoreCall): S {
  const timed = Object.create(inner) as S
  const methods = inner as unknown as Record<string, (...args: unknown[]) => unknown>
  for (const name of methodNames(inner)) {
    const call = (...args: unknown[]): unknown => {
      const start = performance.now()
      let result: unknown
      try {
        result = methods[name]!.apply(inner, args)
      } catch (error) {
        observe(name, 'error', (performance.now() - start) / 1000)
        throw error
      }
      if (result instanceof Promise) {
        result.then(
          () => observe(name, 'ok', (performance.now() - start) / 1000),
          () => observe(name, 'error', (performance.now() - start) / 1000),
        )
      }
      return result
    }
    Object.defineProperty(timed, name, { value: call, writable: true, configurable: true })
  }
  return timed
}
