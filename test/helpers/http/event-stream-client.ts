import { request, type IncomingMessage } from 'node:http'

/**
 * A Server-Sent Events client as a browser's EventSource reads a stream (HTML Living
 * Standard, "Parsing an event stream"): lines end in CRLF, LF or CR; a blank line dispatches
 * the event; `:` starts a comment; `field: value` loses one leading space; `id` sets the last
 * event id. Node 20 has no EventSource, so this one runs over node:http, one connection per
 * stream, and keeps every event and comment in arrival order.
 */

interface StreamedEvent {
  event: string
  data: string
  /** the last event id after this event (what a reconnect sends as Last-Event-ID) */
  id: string
}

type StreamItem =
  { kind: 'event'; event: StreamedEvent } | { kind: 'comment'; text: string } | { kind: 'retry'; ms: number }

export interface OpenedStream {
  status: number
  headers: IncomingMessage['headers']
  /** the body of a non-stream answer (a problem), read whole */
  body: string
  /** everything received so far, in order */
  items: StreamItem[]
  /** the next item after the `seen` first ones, waiting up to `timeoutMs` */
  item(seen: number, timeoutMs: number): Promise<StreamItem>
  /** the next event (skipping comments and retry) not yet returned by this method */
  nextEvent(timeoutMs: number): Promise<StreamedEvent>
  /** resolves when the server ends the stream */
  ended: Promise<void>
  close(): void
}

export async function openEventStream(url: string, headers: Record<string, string>): Promise<OpenedStream> {
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, { headers: { accept: 'text/event-stream', ...headers } }, resolve)
    req.on('error', reject)
    req.end()
  })
  const items: StreamItem[] = []
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const wake of [...waiters]) wake()
  }
  let ended = false
  const endedPromise = new Promise<void>((resolve) => {
    res.on('end', () => {
      ended = true
      notify()
      resolve()
    })
    res.on('close', () => {
      ended = true
      notify()
      resolve()
    })
  })
  const contentType = res.headers['content-type'] ?? ''
  let body = ''
  if (!contentType.startsWith('text/event-stream')) {
    res.setEncoding('utf8')
    for await (const chunk of res) body += chunk as string
  } else {
    let buffer = ''
    let lastId = ''
    let eventType = ''
    let data: string[] = []
    const line = (text: string) => {
      if (text === '') {
        if (data.length > 0) {
          items.push({
            kind: 'event',
            event: { event: eventType || 'message', data: data.join('\n'), id: lastId },
          })
        }
        eventType = ''
        data = []
        return
      }
      if (text.startsWith(':')) {
        items.push({ kind: 'comment', text: text.slice(1).trimStart() })
        return
      }
      const colon = text.indexOf(':')
      const field = colon < 0 ? text : text.slice(0, colon)
      let value = colon < 0 ? '' : text.slice(colon + 1)
      if (value.startsWith(' ')) value = value.slice(1)
      if (field === 'event') eventType = value
      else if (field === 'data') data.push(value)
      else if (field === 'id' && !value.includes('\0')) lastId = value
      else if (field === 'retry' && /^[0-9]+$/.test(value)) items.push({ kind: 'retry', ms: Number(value) })
    }
    res.setEncoding('utf8')
    res.on('data', (chunk: string) => {
      buffer += chunk
      for (;;) {
        const match = /\r\n|\r|\n/.exec(buffer)
        // A CR at the very end may be the first half of a CRLF: wait for more.
        if (match === null || (match[0] === '\r' && match.index === buffer.length - 1)) break
        line(buffer.slice(0, match.index))
        buffer = buffer.slice(match.index + match[0].length)
      }
      notify()
    })
  }
  const item = (seen: number, timeoutMs: number) =>
    new Promise<StreamItem>((resolve, reject) => {
      const check = () => {
        const found = items[seen]
        if (found !== undefined) {
          done()
          resolve(found)
        } else if (ended) {
          done()
          reject(new Error(`the stream ended after ${items.length} items`))
        }
      }
      const timer = setTimeout(() => {
        done()
        reject(new Error(`no item ${seen} within ${timeoutMs} ms (${items.length} so far)`))
      }, timeoutMs)
      const done = () => {
        clearTimeout(timer)
        waiters.delete(check)
      }
      waiters.add(check)
      check()
    })
  let scanned = 0
  return {
    status: res.statusCode ?? 0,
    headers: res.headers,
    body,
    items,
    item,
    async nextEvent(timeoutMs) {
      const until = Date.now() + timeoutMs
      for (;;) {
        const found = await item(scanned, Math.max(1, until - Date.now()))
        scanned++
        if (found.kind === 'event') return found.event
      }
    },
    ended: endedPromise,
    close() {
      res.destroy()
    },
  }
}
