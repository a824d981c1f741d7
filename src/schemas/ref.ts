import { Type, type Static, type TSchema } from '@sinclair/typebox'

/**
 * A `$ref` to a schema published under its `$id` (see shared-schemas.ts), typed as the
 * schema itself. Fastify resolves the reference in validators and serialisers, and the
 * OpenAPI generator turns it into `#/components/schemas/<$id>`, so each shape is named
 * once and every user of it points to it.
 */
export function refTo<T extends TSchema>(schema: T) {
  if (schema.$id === undefined) throw new Error('refTo needs a schema with an $id')
  return Type.Unsafe<Static<T>>(Type.Ref(`${schema.$id}#`))
}
