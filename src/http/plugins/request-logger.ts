import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

/**
 * A request's logger, made when it first writes a line. Fastify makes a child logger for
 * every request, and pino serialises the child's bindings (the request id) as it makes
 * it; yet at the production level (info) a request writes one line, and at warn most
 * write none. A line, when written, comes from the same child Fastify would have made,
 * so it reads the same.
 */

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type LogMethod = FastifyBaseLogger['info']
type Bindings = Parameters<FastifyBaseLogger['child']>[0]

/** pino's loggers have it; the factory falls back to an eager child for any logger without. */
interface LevelAware {
  isLevelEnabled(level: string): boolean
}

const isLevelAware = (logger: FastifyBaseLogger): logger is FastifyBaseLogger & LevelAware =>
  typeof (logger as Partial<LevelAware>).isLevelEnabled === 'function'

class RequestLogger implements FastifyBaseLogger {
  declare fatal: LogMethod
  declare error: LogMethod
  declare warn: LogMethod
  declare info: LogMethod
  declare debug: LogMethod
  declare trace: LogMethod
  /** the child, once a line was written (read by the level methods below) */
  made: FastifyBaseLogger | undefined

  constructor(
    readonly parent: FastifyBaseLogger & LevelAware,
    private readonly bindings: Bindings,
  ) {}

  logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings))
  }

  get level(): string {
    return this.made?.level ?? this.parent.level
  }

  set level(level: string) {
    this.logger().level = level
  }

  silent(): void {}

  child(bindings: Bindings, options?: Parameters<FastifyBaseLogger['child']>[1]): FastifyBaseLogger {
    return this.logger().child(bindings, options)
  }
}

/** On the prototype: a request's logger allocates nothing per level. */
for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const satisfies Level[]) {
  RequestLogger.prototype[level] = function (
    this: RequestLogger,
    ...args: [unknown, string?, ...unknown[]]
  ): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return
    const logger = this.logger()
    logger[level](...args)
  }
}

/** Fastify's childLoggerFactory: lazy unless the route asks for its own level or serialisers. */
export const lazyRequestLogger: NonNullable<FastifyServerOptions['childLoggerFactory']> = (
  logger,
  bindings,
  options,
) => {
  for (const _option in options) return logger.child(bindings, options)
  return isLevelAware(logger) ? new RequestLogger(logger, bindings) : logger.child(bindings, options)
}
