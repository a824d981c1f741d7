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
/**
 * Runs one call (`run`) around something of its own, e.g. inside a span (src/tracing/), and
 * returns what `run` returns.
 */
export type AroundStoreCall = (operation: string, run: () => unknown) => unknown

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

/**
 * A store whose prototype is `inner` and whose every method is an own property made by
 * `make` (which looks `inner`'s method up at each call).
 */
function overEachMethod<S extends object>(
  inner: S,
  make: (name: string) => (...args: unknown[]) => unknown,
): S {
  const wrapper = Object.create(inner) as S
  for (const name of methodNames(inner)) {
    Object.defineProperty(wrapper, name, { value: make(name), writable: true, configurable: true })
  }
  return wrapper
}

/**
 * Every method of `store` that returns a promise, timed from the call to its settling; with
 * `around`, each call runs through it, inside the timing.
 */
export function instrumented<S extends object>(
  store: S,
  observe: ObserveStoreCall,
  around?: AroundStoreCall,
): S {
  // Without `around` the timed calls are the store's own: nothing is added between them.
  const inner = around === undefined ? store : aroundEach(store, around)
  const methods = inner as unknown as Record<string, (...args: unknown[]) => unknown>
  return overEachMethod(inner, (name) => (...args: unknown[]): unknown => {
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
  })
}

function aroundEach<S extends object>(inner: S, around: AroundStoreCall): S {
  const methods = inner as unknown as Record<string, (...args: unknown[]) => unknown>
  return overEachMethod(
    inner,
    (name) =>
      (...args: unknown[]): unknown =>
        around(name, () => methods[name]!.apply(inner, args)),
  )
}
