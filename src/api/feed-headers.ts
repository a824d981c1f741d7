/**
 * Header values of the feeds' answers (docs/api.md "GET /v1/folders/changes", "GET
 * /v1/folders/tree" and "Push (Server-Sent Events)"), for the routes that send them and the
 * API description that documents them. Constants only, no imports, like paths.ts.
 */

/** The media type of a feed followed as Server-Sent Events. */
export const EVENT_STREAM_TYPE = 'text/event-stream'

/** Every answer of a feed, alone or in a stream, is a fresh read of a moving log: nothing may keep it. */
export const FEED_CACHE_CONTROL = 'no-store'
