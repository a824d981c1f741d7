/**
 * The reason a request's wait is aborted when its client closes the connection. One value for
 * every request: `abort()` with no reason builds a DOMException, stack trace included, for
 * each aborted wait, which was a few per cent of the service's CPU when ten thousand
 * followers left at once. Nothing reads the reason; a wait only asks whether it was aborted.
 */
export const CLIENT_GONE: unknown = Object.freeze({ reason: 'the client closed the connection' })
