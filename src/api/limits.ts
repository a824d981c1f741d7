/**
 * Bounds of the HTTP API (docs/api.md) that the server enforces and the client respects.
 * Constants only, no imports, like paths.ts: the client package and browsers load it as it is.
 */

/** The longest `wait` (seconds) of the changes feed and the tree feed. */
export const MAX_WAIT_SECONDS = 60
