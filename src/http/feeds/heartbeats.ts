import type { ServerResponse } from 'node:http'
import { WAKE_SLICE } from '../../feed/watcher.js'

/**
 * The heartbeats of the process's event streams: one timer per interval for every stream
 * that uses it, not one per stream (10,000 idle streams are one timer, not 10,000). A
 * stream's first comment line comes within one interval of its start, then one every
 * interval. With no stream registered there is no timer. A beat is written
 * {@link WAKE_SLICE} streams a turn of the event loop, as a wake is: 10,000 streams written
 * at once held the loop for a quarter of a second (a CPU profile of 10,000 followers).
 */

const HEARTBEAT = Buffer.from(': keep-alive\n\n')

interface Beat {
  timer: NodeJS.Timeout
  streams: Set<ServerResponse>
}

const beats = new Map<number, Beat>()

/** Writes the beat to `due` from `from` on, a slice a turn; a stream that ended meanwhile is skipped. */
function beatInSlices(
  streams: ReadonlySet<ServerResponse>,
  due: readonly ServerResponse[],
  from: number,
): void {
  const to = Math.min(due.length, from + WAKE_SLICE)
  for (let i = from; i < to; i++) {
    const stream = due[i] as ServerResponse
    if (streams.has(stream)) stream.write(HEARTBEAT)
  }
  if (to < due.length) setImmediate(() => beatInSlices(streams, due, to))
}

/** Sends `res` a comment line every `intervalMs` until the returned function is called. */
export function beatEvery(intervalMs: number, res: ServerResponse): () => void {
  let beat = beats.get(intervalMs)
  if (beat === undefined) {
    const streams = new Set<ServerResponse>()
    const timer = setInterval(() => beatInSlices(streams, [...streams], 0), intervalMs)
    beat = { timer, streams }
    beats.set(intervalMs, beat)
  }
  const own = beat
  own.streams.add(res)
  return () => {
    own.streams.delete(res)
    if (own.streams.size > 0) return
    clearInterval(own.timer)
    if (beats.get(intervalMs) === own) beats.delete(intervalMs)
  }
}
