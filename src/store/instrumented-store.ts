import { performance } from 'node:perf_hooks'

/**
 * A store that times every call of the store it wraps and reports it to `observe` (the
 * HTTP layer feeds a Prometheus histogram). A decorator, so the adapters stay free of
 * metrics code and both backends are measured the same way; generic, so a method added to
 * the Store is measured with no edit here.
 */

export type Outcome = 'ok' | 'error'
export type ObserveStoreCall = (operation: string, outcome: Outcome, seconds: number) => void

/** Every method of `inner` that returns a promise, timed from the call to its settling. */
export function instrumented<S extends object>(inner: S, observe: ObserveStoreCall): S {
  // Keyed by the method itself, not its name: a store whose methods change (a test's fault
  // injector) is timed as it is now.
  const timed = new WeakMap<object, unknown>()
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver)
      if (typeof value !== 'function' || typeof property !== 'string') return value
      const method = value as (...args: unknown[]) => unknown
      let wrapper = timed.get(method)
      if (wrapper === undefined) {
        wrapper = (...args: unknown[]) => {
          const start = performance.now()
          const settle = (outcome: Outcome) => observe(property, outcome, (performance.now() - start) / 1000)
          let result: unknown
          try {
            result = method.apply(target, args)
          } catch (error) {
            settle('error')
            throw error
          }
          if (!(result instanceof Promise)) return result
          return result.then(
            (resolved: unknown) => {
              settle('ok')
              return resolved
            },
            (error: unknown) => {
              settle('error')
              throw error
            },
          )
        }
        timed.set(method, wrapper)
      }
      return wrapper
    },
  })
}
