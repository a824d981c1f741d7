import type { FastifyInstance, FastifyReply } from 'fastify'
import type { TSchema } from '@sinclair/typebox'
import { Problem } from '../schemas/problem.js'
import { refTo } from '../schemas/ref.js'
import { feedProblem, type FeedRefusal } from './feed-problems.js'
import type { ParameterRules } from '../schemas/list-folders-query.js'
import { problems } from './problems.js'
import { JSON_CONTENT_TYPE, serializedText } from './serialized.js'

/** Every answer of a feed is a fresh read of a moving log: nothing may store or reuse it. */
export const FEED_CACHE_CONTROL = 'no-store'

/** The responses a feed route declares: its 200 body, and the problems of its refusals. */
export function feedResponses(ok: TSchema) {
  const problem = refTo(Problem)
  return {
    200: ok,
    400: problem,
    401: problem,
    403: problem,
    404: problem,
    410: problem,
    429: problem,
    500: problem,
    503: problem,
  }
}

/**
 * Sends what a feed (changes, tree) answers: its body, serialised once by the route's 200
 * schema for every request that shares it (`serialized`), or its refusal as a problem.
 * `follow` gets a signal that aborts when the client goes away, which frees a held slot at
 * once rather than when its wait would have ended. `rules`: the feed's parameter texts, so
 * a bad cursor's 400 says where that feed's cursors come from.
 */
export async function sendFeedAnswer<B extends object>(
  app: FastifyInstance,
  reply: FastifyReply,
  serialized: WeakMap<B, string>,
  rules: ParameterRules,
  follow: (signal: AbortSignal) => Promise<{ outcome: 'answer'; body: B } | FeedRefusal>,
): Promise<FastifyReply> {
  const gone = new AbortController()
  const onClose = () => {
    if (!reply.raw.writableFinished) gone.abort()
  }
  reply.raw.once('close', onClose)
  try {
    // An answer now would be empty and invite an instant retry: 503 with Retry-After.
    if (app.drainState.draining) throw problems.shuttingDown()
    const result = await follow(gone.signal)
    if (result.outcome !== 'answer') throw feedProblem(result, rules)
    let text = serialized.get(result.body)
    if (text === undefined) {
      text = serializedText(reply, result.body)
      serialized.set(result.body, text)
    }
    return reply.header('cache-control', FEED_CACHE_CONTROL).type(JSON_CONTENT_TYPE).send(text)
  } finally {
    reply.raw.off('close', onClose)
  }
}
