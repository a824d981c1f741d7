import type { ServerResponse } from 'node:http'
import { inTurnSlices } from '../../feed/turn-slices.js'

/**
 * The heartbeats of the process's event streams: one timer per interval for every stream
 * that uses it, not one per stream (10,000 idle streams are one timer, not 10,000). A
 * stream's first comment line comes within one interval of its start, then one every
 * interval. With no stream registered there is no timer. A beat is written
 * a slice a turn of the event loop (feed/turn-slices.ts), as a wake is: 10,000 streams written
 * at once held the loop for a quarter of a second (a CPU profile of 10,000 followers).
 */

const HEARTBEAT = Buffer.from(': keep-alive\n\n')

interface Beat {
  timer: NodeJS.Timeout
  streams: Set<ServerResponse>
}

const beats = new Map<number, Beat>()

/** Writes the beat to every stream of `streams`, a slice a turn; one that ended meanwhile is skipped. */
function beatAll(streams: ReadonlySet<ServerResponse>): void {
  inTurnSlices([...streams], (stream) => {
    if (streams.has(stream)) stream.write(HEARTBEAT)
  })
}

/** Sends `res` a comment line every `intervalMs` until the returned function is called. */
export function beatEvery(intervalMs: number, res: ServerResponse): () => void {
  let beat = beats.get(intervalMs)
  if (beat === undefined) {
    const streams = new Set<ServerResponse>()
    const timer = setInterval(() => beatAll(streams), intervalMs)
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
