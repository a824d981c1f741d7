import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { FEED_CACHE_CONTROL } from '../../api/feed-headers.js'
import { closeWhenDraining } from '../plugins/drain.js'
import { JSON_CONTENT_TYPE } from '../serialized.js'

/**
 * A feed's 200 answer to a GET that may be held (`wait` above 0), written without Fastify's
 * send: one commit wakes thousands of such requests with the same body, and Fastify's send
 * (its onSend hooks, the payload's length, the write it arranges) is work that the body's
 * followers would each repeat. The body's text and length are prepared once per body
 * (feed-answer.ts keeps them with the body); per request, the headers the request's hooks
 * set on arrival (security headers, X-Request-Id, CORS), the feed's own, and one
 * `writeHead` and `end`. Everything else is as Fastify's send makes it: the response's
 * 'finish' records the request (its log line and metrics, request-completion.ts) and runs
 * the route's onResponse hooks, and an answer written while draining says `Connection: close`
 * (drain.ts). Refusals (the 401 or 403 of a session refused after the wait, and the rest)
 * still go through Fastify's error handling, and HEAD through its send.
 */

export interface PreparedBody {
  /** the body's JSON, as the route's serialiser writes it */
  text: string
  /** its length in bytes, as the Content-Length header's text */
  length: string
}

export function prepareBody(text: string): PreparedBody {
  return { text, length: String(Buffer.byteLength(text)) }
}

/** `body` as the 200 answer of `reply`, with every header Fastify's send would write. */
export function sendPrepared(app: FastifyInstance, reply: FastifyReply, body: PreparedBody): FastifyReply {
  closeWhenDraining(app.drainState, reply)
  const headers = reply.getHeaders()
  headers['cache-control'] = FEED_CACHE_CONTROL
  headers['content-type'] = JSON_CONTENT_TYPE
  headers['content-length'] = body.length
  reply.hijack()
  // Fastify's header record admits a number for any name; Node's type does not for a few
  // (such as Accept), but writes numbers as text for every name, as Fastify's send relies on.
  reply.raw.writeHead(200, headers as OutgoingHttpHeaders)
  reply.raw.end(body.text)
  return reply
}
