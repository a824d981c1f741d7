import type { FastifyInstance } from 'fastify'
import { problems } from './problems.js'

/**
 * Every method but `allowed` on `url`: 405 with Allow, decided at onRequest so that no body is
 * parsed (a malformed or unsupported body must not turn it into 400 or 415). With CORS on, a
 * preflight OPTIONS from a listed origin is answered 204 by the CORS hook, which runs first.
 */
export function refuseOtherMethods(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  const refusal = () => problems.methodNotAllowed([...allowed])
  app.route({
    method: app.supportedMethods.filter((m) => !allowed.includes(m)),
    url,
    schema: { hide: true },
    onRequest: (_request, _reply, done) => done(refusal()),
    handler: () => {
      throw refusal()
    },
  })
}
