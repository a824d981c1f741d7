import { Type, type Static } from '@sinclair/typebox'

/** RFC 9457 problem details, the body of every error (CONTRACT section 6). */

export const PROBLEM_CODES = [
  'INVALID_INPUT',
  'UNAUTHORIZED',
  'FROZEN_ACCOUNT',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'RATE_LIMITED',
  'UNAVAILABLE',
  'INTERNAL',
] as const

export type ProblemCode = (typeof PROBLEM_CODES)[number]

export const Problem = Type.Object(
  {
    type: Type.String({ examples: ['about:blank'] }),
    title: Type.String(),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    code: Type.Union(PROBLEM_CODES.map((code) => Type.Literal(code))),
    detail: Type.String(),
    request_id: Type.String(),
  },
  { additionalProperties: false, description: 'RFC 9457 problem details' },
)

export type ProblemBody = Static<typeof Problem>
