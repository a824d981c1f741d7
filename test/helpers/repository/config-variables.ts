import { loadConfig, type Env } from '../../../src/config.js'

/**
 * The environment variables `loadConfig` reads, recorded by handing it an environment that
 * notes every name asked for. Every setting is read unconditionally (unset ones fall back to
 * their default), so one call with nothing set sees them all.
 */
export function configVariables(): string[] {
  const read = new Set<string>()
  const recording: Env = new Proxy(
    {},
    {
      get: (_target, name) => {
        if (typeof name === 'string') read.add(name)
        return undefined
      },
    },
  )
  loadConfig(recording)
  return [...read]
}
