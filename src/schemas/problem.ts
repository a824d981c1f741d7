import { Type, type Static } from '@sinclair/typebox'
import { PROBLEM_CODES } from './problem-codes.js'
import { Text } from './bounded.js'

export { type ProblemCode } from './problem-codes.js'

/** RFC 9457 problem details, the body of every error (docs/api.md, "Errors"). */

export const Problem = Type.Object(
  {
    type: Type.Literal('about:blank'),
    title: Text(64, { examples: ['Not Found'] }),
    status: Type.Integer({ format: 'int32', minimum: 400, maximum: 599 }),
    code: Type.Union(PROBLEM_CODES.map((code) => Type.Literal(code))),
    detail: Text(1024, { examples: ['No folder with that id is visible to this user.'] }),
    request_id: Text(128, { description: 'the X-Request-Id of the answer; also in the log line' }),
  },
  { $id: 'Problem', additionalProperties: false, description: 'RFC 9457 problem details' },
)

export type ProblemBody = Static<typeof Problem>
