import { Type, type Static } from '@sinclair/typebox'
import { PROBLEM_CODES } from './problem-codes.js'

export { PROBLEM_CODES, type ProblemCode } from './problem-codes.js'

/** RFC 9457 problem details, the body of every error (docs/api.md, "Errors"). */

export const Problem = Type.Object(
  {
    type: Type.String({ examples: ['about:blank'] }),
    title: Type.String(),
    status: Type.Integer({ minimum: 400, maximum: 599 }),
    code: Type.Union(PROBLEM_CODES.map((code) => Type.Literal(code))),
    detail: Type.String(),
    request_id: Type.String(),
  },
  { $id: 'Problem', additionalProperties: false, description: 'RFC 9457 problem details' },
)

export type ProblemBody = Static<typeof Problem>
