import { after, before } from 'node:test'
import fc from 'fast-check'
import Fastify, { type FastifyInstance, type FastifySchema } from 'fastify'
import { serializedText } from '../../src/http/serialized.js'
import { SHARED_SCHEMAS } from '../../src/schemas/shared-schemas.js'

/**
 * What the hand-written JSON of an answer (src/http/folder-list-json.ts,
 * folder-tree-json.ts) is compared with: the route's own 200 schema serialiser, and the
 * strings that decide escaping.
 */

/** Characters each of which escaping decides on alone: quote, backslash, controls, surrogates, astral. */
export const tricky = fc.constantFrom(
  '"',
  '\\',
  '\n',
  '\u0000',
  '\u001f',
  '\u007f',
  'a',
  'é',
  '\u2028',
  '\ud800',
  '\udc00',
  '😀',
)

/**
 * The serialiser compiled from `response` (a route's response schemas), as a suite's
 * before/after hooks build and close it: a body in, the 200 text out.
 */
export function schemaSerialiser(response: FastifySchema['response']): (body: unknown) => Promise<string> {
  let app: FastifyInstance
  let body: unknown
  let text = ''
  before(async () => {
    app = Fastify()
    for (const schema of SHARED_SCHEMAS) app.addSchema(schema)
    app.get('/', { schema: { response } }, (_request, reply) => {
      // The route's serialiser is read here; what the app answers does not matter.
      text = serializedText(reply, body)
      return reply.send()
    })
    await app.ready()
  })
  after(() => app.close())
  return async (value) => {
    body = value
    await app.inject({ url: '/' })
    return text
  }
}
