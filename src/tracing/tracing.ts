import type { IncomingMessage, ServerResponse } from 'node:http'

/**
 * The process's tracing, as the rest of the service sees it: null while tracing is off (the
 * default), else the one object start-tracing.ts made once the OpenTelemetry SDK was loaded.
 * Nothing here imports OpenTelemetry: a module that traces asks {@link activeTracing} once,
 * when it is built, and keeps its untraced code path when the answer is null, so that a
 * service without tracing runs exactly the code it ran before tracing existed.
 *
 * The methods name what the service does (a request, a store call, a statement, a wake), not
 * OpenTelemetry's vocabulary: the span names and semantic-convention attributes are chosen in
 * one place (otel-tracing.ts). A span is made only inside a trace that is recorded (sampled):
 * below an unsampled request nothing is made at all.
 */

/** Attributes as the SDK takes them. */
export type SpanAttributes = Record<string, string | number | boolean>

/** A span being recorded, as the work inside it may add to it. */
export interface SpanNotes {
  set(key: string, value: string | number | boolean): void
}

export interface StepOptions {
  attributes?: SpanAttributes
  /** whether a thrown error marks the span failed (default: every error) */
  failed?: (error: unknown) => boolean
}

/** A PostgreSQL server as a statement's span names it: never its URL (it may hold a password). */
export interface DatabaseServer {
  /** `host:port` */
  target: string
  /** the database's name */
  database: string
  role: 'primary' | 'replica'
}

/** The watcher's side of the feeds' traces (feed/watcher.ts). */
export interface WakeTracing {
  /**
   * Runs `work` outside any request's trace: the watcher's reads run from timers that a held
   * request once scheduled, and would otherwise be counted in that request's trace.
   */
  detached<T>(work: () => T): T
  /**
   * A read of the generations (begun at `startedAt`, performance.now()) woke `targets`: one
   * span for the wake, of a trace of its own, and `deliver` (which wakes them) run inside it;
   * each target's next delivered answer links to it ({@link Tracing.delivered}).
   */
  woke(targets: readonly object[], startedAt: number, deliver: () => void): void
}

export interface Tracing {
  /**
   * Runs `handle` (the HTTP server's handler of `request`) inside the request's server span,
   * which continues the trace of an incoming `traceparent`.
   */
  serve(request: IncomingMessage, response: ServerResponse, handle: () => void): void
  /** `request` was answered: its route pattern (null: none matched), status and client; ends its span. */
  answered(
    request: IncomingMessage,
    answer: { route: string | null; status: number; clientAddress: string; requestId: string },
  ): void
  /** `trace_id`, `span_id` and `trace_flags` of the request's span, for its log lines (null: none) */
  logFields(request: IncomingMessage): Record<string, string> | null
  /** `work` inside a span of its own below the active one (with no recorded span active, `work` alone) */
  step<T>(name: string, work: (span: SpanNotes) => Promise<T>, options?: StepOptions): Promise<T>
  /** Sets an attribute of the active span, when one is recorded. */
  annotate(key: string, value: string | number | boolean): void
  /**
   * `work` as the first span of a command, continuing the trace of `carrier`'s `traceparent`
   * (the TRACEPARENT and TRACESTATE variables of its environment), else of a trace of its own.
   */
  root<T>(
    name: string,
    work: (span: SpanNotes) => Promise<T>,
    carrier?: { traceparent?: string | undefined; tracestate?: string | undefined },
  ): Promise<T>
  /** One call of the Store on `backend`, `run` inside its span; returns what `run` returns. */
  storeCall(backend: string, operation: string, run: () => unknown): unknown
  /** One PostgreSQL statement (by its prepared name, else its first keyword) on `server`. */
  statement<T>(name: string, server: DatabaseServer, run: () => Promise<T>): Promise<T>
  /** A wait for a primary to be found among `targets` (host:port list); end it with the one found. */
  primaryWait(targets: string): { end(found: string | null): void }
  /** The feeds' watcher's tracing (made once per watcher). */
  wakes(): WakeTracing
  /**
   * An answer was delivered to `follower` (a held request's slot, a stream): a span from the
   * wake that caused it to now, linked to that wake, below `request`'s span when given (a
   * stream, whose events are sent outside its request's context), else below the active one.
   */
  delivered(follower: object, attributes: SpanAttributes, request?: IncomingMessage): void
  /** Routes the SDK's own warnings (an unreachable collector) to the service's log. */
  reportTo(log: { warn(object: object, message: string): void }): void
  /** Sends what is pending (bounded wait) and stops. */
  shutdown(): Promise<void>
}

let active: Tracing | null = null

/** The process's tracing, or null when it is off. */
export function activeTracing(): Tracing | null {
  return active
}

/** Set by start-tracing.ts; null again once tracing stopped. */
export function useTracing(tracing: Tracing | null): void {
  active = tracing
}

/**
 * `work` in a span when tracing is on, else `work` alone: for paths run a few times per
 * command (an import's phases), where asking costs nothing worth a seam of its own.
 */
export function traced<T>(name: string, work: () => Promise<T>, options?: StepOptions): Promise<T> {
  return active === null ? work() : active.step(name, work, options)
}
