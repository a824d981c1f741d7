/**
 * OTLP trace exports decoded into plain spans, from either encoding of OTLP/HTTP: the
 * protobuf wire format (a minimal reader of the few messages of
 * opentelemetry/proto/collector/trace/v1, by field number) and OTLP/JSON (ids as hex).
 */

type AttributeValue = string | number | boolean | AttributeValue[]

interface ReceivedLink {
  traceId: string
  spanId: string
}

export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** '' for a root span */
  parentSpanId: string
  traceState: string
  name: string
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer */
  kind: number
  startNs: bigint
  endNs: bigint
  attributes: Record<string, AttributeValue>
  links: ReceivedLink[]
  /** 0 unset, 1 ok, 2 error */
  status: { code: number; message: string }
  resource: Record<string, AttributeValue>
  scope: string
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const

// ---- the protobuf wire format ----

type Field = { number: number; varint?: bigint; bytes?: Buffer; fixed?: Buffer }

/** The fields of one message, in order (a repeated field appears once per value). */
function fields(buffer: Buffer): Field[] {
  const out: Field[] = []
  let at = 0
  const varint = (): bigint => {
    let result = 0n
    let shift = 0n
    for (;;) {
      if (at >= buffer.length) throw new Error('protobuf: truncated varint')
      const byte = buffer[at++] as number
      result |= BigInt(byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return result
      shift += 7n
    }
  }
  while (at < buffer.length) {
    const key = Number(varint())
    const number = key >>> 3
    switch (key & 7) {
      case 0:
        out.push({ number, varint: varint() })
        break
      case 1:
        out.push({ number, fixed: buffer.subarray(at, (at += 8)) })
        break
      case 2: {
        const length = Number(varint())
        out.push({ number, bytes: buffer.subarray(at, (at += length)) })
        break
      }
      case 5:
        out.push({ number, fixed: buffer.subarray(at, (at += 4)) })
        break
      default:
        throw new Error(`protobuf: wire type ${key & 7} not expected`)
    }
  }
  return out
}

const all = (message: Field[], number: number) => message.filter((field) => field.number === number)
const first = (message: Field[], number: number) => message.find((field) => field.number === number)
const text = (field: Field | undefined) => field?.bytes?.toString('utf8') ?? ''
const hex = (field: Field | undefined) => field?.bytes?.toString('hex') ?? ''

function anyValue(buffer: Buffer): AttributeValue {
  const [field] = fields(buffer)
  if (field === undefined) return ''
  switch (field.number) {
    case 1:
      return text(field)
    case 2:
      return field.varint === 1n
    case 3:
      return Number(BigInt.asIntN(64, field.varint ?? 0n))
    case 4:
      return field.fixed?.readDoubleLE(0) ?? 0
    case 5:
      return all(fields(field.bytes ?? Buffer.alloc(0)), 1).map((value) =>
        anyValue(value.bytes ?? Buffer.alloc(0)),
      )
    default:
      return `<field ${field.number}>`
  }
}

function protobufAttributes(message: Field[], number: number): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {}
  for (const field of all(message, number)) {
    const pair = fields(field.bytes ?? Buffer.alloc(0))
    attributes[text(first(pair, 1))] = anyValue(first(pair, 2)?.bytes ?? Buffer.alloc(0))
  }
  return attributes
}

function decodeProtobuf(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = []
  for (const resourceSpans of all(fields(body), 1)) {
    const rs = fields(resourceSpans.bytes ?? Buffer.alloc(0))
    const resource = protobufAttributes(fields(first(rs, 1)?.bytes ?? Buffer.alloc(0)), 1)
    for (const scopeSpans of all(rs, 2)) {
      const ss = fields(scopeSpans.bytes ?? Buffer.alloc(0))
      const scope = text(first(fields(first(ss, 1)?.bytes ?? Buffer.alloc(0)), 1))
      for (const spanField of all(ss, 2)) {
        const span = fields(spanField.bytes ?? Buffer.alloc(0))
        const status = fields(first(span, 15)?.bytes ?? Buffer.alloc(0))
        spans.push({
          traceId: hex(first(span, 1)),
          spanId: hex(first(span, 2)),
          traceState: text(first(span, 3)),
          parentSpanId: hex(first(span, 4)),
          name: text(first(span, 5)),
          kind: Number(first(span, 6)?.varint ?? 0n),
          startNs: first(span, 7)?.fixed?.readBigUInt64LE(0) ?? 0n,
          endNs: first(span, 8)?.fixed?.readBigUInt64LE(0) ?? 0n,
          attributes: protobufAttributes(span, 9),
          links: all(span, 13).map((link) => {
            const fieldsOf = fields(link.bytes ?? Buffer.alloc(0))
            return { traceId: hex(first(fieldsOf, 1)), spanId: hex(first(fieldsOf, 2)) }
          }),
          status: { message: text(first(status, 2)), code: Number(first(status, 3)?.varint ?? 0n) },
          resource,
          scope,
        })
      }
    }
  }
  return spans
}

// ---- OTLP/JSON ----

interface JsonValue {
  stringValue?: string
  boolValue?: boolean
  intValue?: string | number
  doubleValue?: number
  arrayValue?: { values?: JsonValue[] }
}
interface JsonKeyValue {
  key: string
  value?: JsonValue
}
interface JsonSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  traceState?: string
  name: string
  kind?: number
  startTimeUnixNano?: string | number
  endTimeUnixNano?: string | number
  attributes?: JsonKeyValue[]
  links?: { traceId: string; spanId: string }[]
  status?: { code?: number; message?: string }
}
interface JsonExport {
  resourceSpans?: {
    resource?: { attributes?: JsonKeyValue[] }
    scopeSpans?: { scope?: { name?: string }; spans?: JsonSpan[] }[]
  }[]
}

function jsonValue(value: JsonValue | undefined): AttributeValue {
  if (value === undefined) return ''
  if (value.stringValue !== undefined) return value.stringValue
  if (value.boolValue !== undefined) return value.boolValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(jsonValue)
  return ''
}

const jsonAttributes = (pairs: JsonKeyValue[] | undefined) =>
  Object.fromEntries((pairs ?? []).map(({ key, value }) => [key, jsonValue(value)]))

/** OTLP/JSON writes ids as hex; a base64 id (protobuf's JSON mapping) is turned into hex. */
function jsonId(id: string | undefined, bytes: number): string {
  if (id === undefined || id === '') return ''
  if (id.length === bytes * 2 && /^[0-9a-f]+$/i.test(id)) return id.toLowerCase()
  return Buffer.from(id, 'base64').toString('hex')
}

function decodeJson(body: Buffer): ReceivedSpan[] {
  const parsed = JSON.parse(body.toString('utf8')) as JsonExport
  return (parsed.resourceSpans ?? []).flatMap((rs) => {
    const resource = jsonAttributes(rs.resource?.attributes)
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((span) => ({
        traceId: jsonId(span.traceId, 16),
        spanId: jsonId(span.spanId, 8),
        parentSpanId: jsonId(span.parentSpanId, 8),
        traceState: span.traceState ?? '',
        name: span.name,
        kind: span.kind ?? 0,
        startNs: BigInt(span.startTimeUnixNano ?? 0),
        endNs: BigInt(span.endTimeUnixNano ?? 0),
        attributes: jsonAttributes(span.attributes),
        links: (span.links ?? []).map((link) => ({
          traceId: jsonId(link.traceId, 16),
          spanId: jsonId(link.spanId, 8),
        })),
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
        resource,
        scope: ss.scope?.name ?? '',
      })),
    )
  })
}

/** The spans of one export, by its content type. */
export function decodeTraces(body: Buffer, contentType: string): ReceivedSpan[] {
  if (contentType.startsWith('application/json')) return decodeJson(body)
  if (contentType.startsWith('application/x-protobuf')) return decodeProtobuf(body)
  throw new Error(`not an OTLP/HTTP content type: '${contentType}'`)
}
