import { ConfigError, type Kind } from '../config-values.js'

/**
 * The kinds of value of the OpenTelemetry variables (src/config.ts declares them with the
 * service's own settings), read as the OpenTelemetry specification's "Environment Variable
 * Specification" defines them, with one difference the service makes everywhere: a value
 * the specification would warn about and ignore stops start-up here, naming the variable.
 */

/** `service.name` when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names the service. */
export const DEFAULT_SERVICE_NAME = 'folder-service'

/** OTEL_TRACES_EXPORTER: only OTLP is offered; `none`, the default here, traces nothing. */
export const TRACES_EXPORTERS = ['none', 'otlp'] as const

/** OTEL_EXPORTER_OTLP_PROTOCOL: OTLP over HTTP in either encoding (no gRPC client is shipped). */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const

/** OTEL_TRACES_SAMPLER: the specification's samplers the SDK implements. */
export const TRACE_SAMPLERS = [
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
  'always_on',
  'always_off',
  'traceidratio',
] as const

/** The specification's boolean: `true` or `false` in any case; empty is the default. */
export const otelBoolean: Kind<boolean> = {
  read(raw, name, fallback) {
    const value = (raw ?? '').trim().toLowerCase()
    if (value === '') return fallback
    if (value === 'true') return true
    if (value === 'false') return false
    throw new ConfigError(name, `expected true or false, got '${raw}'`)
  },
  show: String,
  accepts: (code) => `${code('true')} or ${code('false')}`,
}

/** One of `choices`, or '' for unset (a signal's own setting that defers to the general one). */
export function optionalOneOf(choices: readonly string[]): Kind<string> {
  return {
    read(raw, name, fallback) {
      const value = (raw ?? '').trim()
      if (value === '') return fallback
      if (!choices.includes(value)) {
        throw new ConfigError(name, `expected one of ${choices.join(', ')}, got '${value}'`)
      }
      return value
    },
    show: (value) => value,
    accepts: (code) => `empty, ${choices.map(code).join(', ')}`,
  }
}

/** An http:// or https:// URL (an OTLP receiver), or '' for unset. */
export const httpUrl: Kind<string> = {
  read(raw, name, fallback) {
    const value = (raw ?? '').trim()
    if (value === '') return fallback
    let url: URL
    try {
      url = new URL(value)
    } catch {
      throw new ConfigError(name, `expected an http:// or https:// URL, got '${value}'`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError(name, `expected an http:// or https:// URL, got '${value}'`)
    }
    // A URL's credentials would reach the exporter's error messages: headers carry secrets.
    if (url.username !== '' || url.password !== '') {
      throw new ConfigError(name, 'a URL with credentials: give them in OTEL_EXPORTER_OTLP_HEADERS')
    }
    return value
  },
  show: (value) => value,
  accepts: (code) => `an ${code('http://')} or ${code('https://')} URL`,
}

/** A probability from 0 to 1 (OTEL_TRACES_SAMPLER_ARG of the ratio samplers), or null for unset. */
export const probability: Kind<number | null> = {
  read(raw, name, fallback) {
    const value = (raw ?? '').trim()
    if (value === '') return fallback
    const number = Number(value)
    if (!/^[0-9.eE+-]+$/.test(value) || !Number.isFinite(number) || number < 0 || number > 1) {
      throw new ConfigError(name, `expected a probability from 0 to 1, got '${value}'`)
    }
    return number
  },
  show: (value) => (value === null ? '' : String(value)),
  accepts: (code) => `${code('0')} to ${code('1')}`,
}

/**
 * OTEL_RESOURCE_ATTRIBUTES: `key=value` pairs separated by commas, each value
 * percent-decoded (the W3C Baggage octet rules the specification refers to).
 */
export const keyValueList: Kind<Readonly<Record<string, string>>> = {
  read(raw, name, fallback) {
    const value = (raw ?? '').trim()
    if (value === '') return fallback
    const pairs: Record<string, string> = {}
    for (const entry of value.split(',')) {
      const at = entry.indexOf('=')
      const key = entry.slice(0, at).trim()
      if (at < 1 || key === '') throw new ConfigError(name, `expected key=value pairs, got '${entry.trim()}'`)
      try {
        pairs[key] = decodeURIComponent(entry.slice(at + 1).trim())
      } catch {
        throw new ConfigError(name, `the value of '${key}' has a malformed percent escape`)
      }
    }
    return Object.freeze(pairs)
  },
  show: (value) =>
    Object.entries(value)
      .map(([key, text]) => `${key}=${encodeURIComponent(text)}`)
      .join(','),
  accepts: (code) => `comma-separated ${code('key=value')} pairs`,
}
