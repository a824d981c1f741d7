import { tracingSettings, type TracingConfig } from './tracing-settings.js'
import { activeTracing, useTracing, type Tracing } from './tracing.js'

/**
 * Starts the process's tracing when the configuration asks for it, before anything that
 * traces is built (the store, the app): those ask activeTracing() once, as they are made.
 * Off (the default), nothing is loaded: the SDK is imported here only when tracing is on.
 */
export async function startTracing(config: TracingConfig): Promise<Tracing | null> {
  const settings = tracingSettings(config)
  if (settings === null) return null
  const started = activeTracing()
  if (started !== null) return started
  const { openTelemetryTracing } = await import('./otel-tracing.js')
  const tracing = openTelemetryTracing(settings)
  useTracing(tracing)
  return tracing
}

/** Sends the spans still pending (a bounded wait) and stops tracing; nothing when it is off. */
export async function stopTracing(): Promise<void> {
  const tracing = activeTracing()
  if (tracing === null) return
  useTracing(null)
  await tracing.shutdown()
}
