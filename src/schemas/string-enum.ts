import { Type, type TUnsafe } from '@sinclair/typebox'

/**
 * A string that is one of `values`, as one JSON Schema `enum` rather than a union of
 * literals: OpenAPI tools (Swagger UI's Try it out among them) offer an enum's values as one
 * choice, a union's as nested alternatives. The type is an intersection with the schema's
 * own shape so that both TypeBox versions in use infer the union of the values: this one's
 * Static reads the Unsafe type, the Fastify type provider's reads `type` and `enum`.
 */
export function stringEnum<const Values extends readonly [string, ...string[]]>(
  values: Values,
  options: { description: string },
): TUnsafe<Values[number]> & { readonly type: 'string'; readonly enum: Values } {
  const schema = Type.Unsafe<Values[number]>({ type: 'string', enum: values, ...options })
  // The schema object has exactly these `type` and `enum`; the cast only says so to the compiler.
  return schema as typeof schema & { readonly type: 'string'; readonly enum: Values }
}
