/**
 * Header values of the feeds' answers (docs/api.md "Changes", "The folder tree", "Push"),
 * for the routes that send them and the API description that documents them. Constants
 * only, no imports, like paths.ts.
 */

/** The media type of a feed followed as Server-Sent Events. */
export const EVENT_STREAM_TYPE = 'text/event-stream'

/** Every answer of a feed, one or a stream, is a fresh read of a moving log: nothing may store or reuse it. */
export const FEED_CACHE_CONTROL = 'no-store'
