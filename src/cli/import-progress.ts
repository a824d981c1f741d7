import type { ReadProgress } from '../import/read-import-file.js'

/**
 * The progress line of `folder-service import` on an interactive terminal: records and
 * bytes read of the total, rate, estimated time left; rewritten in place at most four times
 * a second. Not a terminal (a log, CI, a pipe): nothing, only the final summary.
 */

const PROGRESS_INTERVAL_MS = 250

/** The phase after the last record is read: the database checks and copies. */
export interface ImportProgress extends ReadProgress {
  /** set once the whole file has been read */
  readAt?: number
}

const MB = 1024 * 1024
const count = (n: number) => Math.round(n).toLocaleString('en-US')

function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds))
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  const rest = String(s % 60).padStart(2, '0')
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${rest}` : `${m}:${rest}`
}

/** One progress line for the state `p`, `seconds` after the start. */
function progressLine(p: ImportProgress, seconds: number): string {
  const rate = seconds > 0 ? p.records / seconds : 0
  const read = `${(p.bytesRead / MB).toFixed(1)} of ${(p.totalBytes / MB).toFixed(1)} MB`
  if (p.readAt !== undefined) {
    return `importing: ${count(p.records)} records read (${read}); checking and writing, ${duration(seconds - p.readAt)} so far`
  }
  const share = p.totalBytes > 0 ? Math.min(100, Math.floor((p.bytesRead / p.totalBytes) * 100)) : 0
  const byteRate = seconds > 0 ? p.bytesRead / seconds : 0
  const left = byteRate > 0 ? `about ${duration((p.totalBytes - p.bytesRead) / byteRate)} left to read` : ''
  return `importing: ${count(p.records)} records, ${read} (${share}%), ${count(rate)} records/s, ${left}`
}

export interface ProgressDisplay {
  /** Removes the line (before the summary is printed or an error is reported). */
  stop(): void
}

export function showProgress(
  progress: ImportProgress,
  stream: NodeJS.WriteStream,
  started: number = performance.now(),
): ProgressDisplay {
  if (stream.isTTY !== true) return { stop: () => undefined }
  const draw = () => {
    const line = progressLine(progress, (performance.now() - started) / 1000)
    const width = stream.columns > 1 ? stream.columns - 1 : line.length
    stream.write(`\r\x1b[K${line.slice(0, width)}`)
  }
  draw()
  const timer = setInterval(draw, PROGRESS_INTERVAL_MS)
  timer.unref()
  return {
    stop: () => {
      clearInterval(timer)
      stream.write('\r\x1b[K')
    },
  }
}
