import net from 'node:net'

/**
 * HTTP/1.1 over a raw TCP socket, for what app.inject cannot send: malformed request lines,
 * invalid header bytes, oversized headers, pipelining. Reads until the server closes the
 * connection (or `idleMs` of silence after an answer, or `timeoutMs` in all) and parses
 * every response it got.
 */

export interface RawResponse {
  status: number
  reason: string
  /** header names lower-cased; repeated headers joined with ', ' */
  headers: Record<string, string>
  body: string
}

export interface RawExchange {
  responses: RawResponse[]
  /** the server closed (or reset) the connection */
  closed: boolean
  /** the exchange hit timeoutMs without the server closing or answering */
  timedOut: boolean
  /** bytes that could not be parsed as responses */
  rest: string
  error: string | undefined
}

function parseResponses(data: Buffer): { responses: RawResponse[]; rest: string } {
  const responses: RawResponse[] = []
  let offset = 0
  while (offset < data.length) {
    const end = data.indexOf('\r\n\r\n', offset)
    if (end < 0) break
    const head = data.subarray(offset, end).toString('latin1').split('\r\n')
    const m = /^HTTP\/1\.[01] (\d{3}) ?(.*)$/.exec(head[0] ?? '')
    if (m === null) break
    const headers: Record<string, string> = {}
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':')
      const name = line.slice(0, colon).trim().toLowerCase()
      const value = line.slice(colon + 1).trim()
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`
    }
    let cursor = end + 4
    let body: Buffer = Buffer.alloc(0)
    const status = Number(m[1])
    if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      const chunks: Buffer[] = []
      for (;;) {
        const lineEnd = data.indexOf('\r\n', cursor)
        if (lineEnd < 0) return { responses, rest: data.subarray(offset).toString('latin1') }
        const size = parseInt(data.subarray(cursor, lineEnd).toString('latin1'), 16)
        cursor = lineEnd + 2
        if (!Number.isFinite(size) || size === 0) {
          cursor += 2
          break
        }
        chunks.push(data.subarray(cursor, cursor + size))
        cursor += size + 2
      }
      body = Buffer.concat(chunks)
    } else if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length'])
      body = data.subarray(cursor, cursor + length)
      cursor += length
    } else if (status !== 304 && status !== 204 && status >= 200) {
      body = data.subarray(cursor)
      cursor = data.length
    }
    responses.push({ status, reason: m[2] ?? '', headers, body: body.toString('utf8') })
    offset = cursor
  }
  return { responses, rest: data.subarray(offset).toString('latin1') }
}

export interface ExchangeOptions {
  timeoutMs?: number
  /** after at least `expect` responses arrived, wait this long for more, then hang up */
  idleMs?: number
  expect?: number
}

/** Sends `request` (in one write, or in the given pieces) and collects what comes back. */
export function rawExchange(
  port: number,
  request: string | Buffer | (string | Buffer)[],
  options: ExchangeOptions = {},
): Promise<RawExchange> {
  const timeoutMs = options.timeoutMs ?? 5000
  const idleMs = options.idleMs ?? 300
  const expect = options.expect ?? 1
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let closed = false
    let timedOut = false
    let error: string | undefined
    let idle: NodeJS.Timeout | undefined
    const finish = () => {
      clearTimeout(overall)
      clearTimeout(idle)
      socket.destroy()
      const { responses, rest } = parseResponses(Buffer.concat(chunks))
      resolve({ responses, closed, timedOut, rest, error })
    }
    const overall = setTimeout(() => {
      timedOut = true
      finish()
    }, timeoutMs)
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      if (parseResponses(Buffer.concat(chunks)).responses.length >= expect) {
        clearTimeout(idle)
        idle = setTimeout(finish, idleMs)
      }
    })
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message
    })
    socket.on('close', () => {
      closed = true
      finish()
    })
    socket.on('connect', () => {
      for (const piece of Array.isArray(request) ? request : [request]) {
        if (!socket.destroyed) socket.write(piece)
      }
    })
  })
}

/**
 * A request sent in two parts: `head` now, the rest when `complete` is called. Between the
 * two, the server holds a request it has begun to receive: an in-flight request.
 */
export interface PartialRequest {
  complete(rest: string, options?: ExchangeOptions): Promise<RawExchange>
}

export async function openPartialRequest(port: number, head: string): Promise<PartialRequest> {
  const socket = net.connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  let closed = false
  let error: string | undefined
  socket.on('data', (chunk: Buffer) => chunks.push(chunk))
  socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message))
  socket.on('close', () => (closed = true))
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  socket.write(head)
  return {
    complete(rest, options = {}) {
      const timeoutMs = options.timeoutMs ?? 5000
      return new Promise((resolve) => {
        const finish = (timedOut: boolean) => {
          clearTimeout(timer)
          socket.destroy()
          const { responses, rest: unparsed } = parseResponses(Buffer.concat(chunks))
          resolve({ responses, closed, timedOut, rest: unparsed, error })
        }
        const timer = setTimeout(() => finish(true), timeoutMs)
        if (closed) {
          finish(false)
          return
        }
        socket.on('close', () => finish(false))
        socket.on('data', () => {
          if (parseResponses(Buffer.concat(chunks)).responses.length > 0) setTimeout(() => finish(false), 100)
        })
        socket.write(rest)
      })
    },
  }
}
