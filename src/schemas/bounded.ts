import { Type, type StringOptions, type TString } from '@sinclair/typebox'

/**
 * Strings and query parameters with their bounds stated, so that the OpenAPI document tells
 * clients (and API security linters) how long a value can be. A new schema takes its strings
 * from here rather than from Type.String. Nothing here may import Node modules: the client,
 * which runs in browsers, takes its types from these schemas.
 */

/** Free text of at most `maxLength` characters (code points, as JSON Schema counts). */
export const Text = (maxLength: number, options: StringOptions = {}): TString =>
  Type.String({ maxLength, ...options })

/** A UUID as the service writes it: lower case. */
export const Uuid = (options: StringOptions = {}): TString =>
  Type.String({ format: 'uuid', maxLength: 36, description: 'lower-case UUID', ...options })

/** A timestamp as the service writes it: `2026-01-31T09:15:00.000Z`. */
export const Timestamp = (options: StringOptions = {}): TString =>
  Type.String({
    format: 'date-time',
    maxLength: 24,
    description: 'UTC, millisecond precision, `Z` designator',
    examples: ['2026-01-31T09:15:00.000Z'],
    ...options,
  })

/** The alphabet and bound of every continuation and changes token. */
const TOKEN_MAX_LENGTH = 256
export const TOKEN_PATTERN = `^[A-Za-z0-9_-]{1,${TOKEN_MAX_LENGTH}}$`
export const Token = (options: StringOptions = {}): TString =>
  Type.String({ pattern: TOKEN_PATTERN, maxLength: TOKEN_MAX_LENGTH, ...options })

interface IntegerBounds {
  minimum: number
  maximum: number
}

/** pattern of each decimalParameter -> its bounds, for the document (http/plugins/openapi.ts) */
const documentedIntegers = new Map<string, IntegerBounds>()

/**
 * A query parameter of decimal digits from `minimum` to `maximum`. Validated as a string with
 * `pattern`, which sees exactly what was sent, so `+1`, ` 1`, `1e2` and `0x10` stay 400 as the
 * contract asks (numeric coercion would take them). Documented as an integer with those
 * bounds (documentedInteger): what a generated client sends, and what the pattern accepts.
 */
export function decimalParameter(pattern: string, bounds: IntegerBounds, options: StringOptions): TString {
  const known = documentedIntegers.get(pattern)
  if (known !== undefined && (known.minimum !== bounds.minimum || known.maximum !== bounds.maximum)) {
    throw new Error(`decimalParameter: one pattern, two bounds (${pattern})`)
  }
  documentedIntegers.set(pattern, bounds)
  return Type.String({ pattern, ...options })
}

/** The integer a decimalParameter's pattern stands for, or undefined for any other pattern. */
export function documentedInteger(pattern: unknown): IntegerBounds | undefined {
  return typeof pattern === 'string' ? documentedIntegers.get(pattern) : undefined
}
