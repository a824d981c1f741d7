import type { FastifyReply } from 'fastify'

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/**
 * `body` as the route's response schema serialises it (only the schema's fields reach the
 * text), for answers built once and sent many times.
 */
export function serializedText(reply: FastifyReply, body: unknown): string {
  // The schema serialiser returns a string; the type also admits custom serialisers' buffers.
  const bytes = reply.serialize(body)
  return typeof bytes === 'string' ? bytes : new TextDecoder().decode(bytes)
}
