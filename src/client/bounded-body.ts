/**
 * Reading an answer's body with a size bound: a declared Content-Length beyond it is refused
 * before reading, and a body that grows past it is cut off there (the rest is never read,
 * the stream is cancelled), so a broken or hostile server cannot make the client hold more
 * than `maxBytes`. Counted after content decoding: the bound is on memory, not on the wire.
 */

/** The body as text, or null when it is larger than `maxBytes` (then nothing more is read). */
export async function readBoundedText(response: Response, maxBytes: number): Promise<string | null> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined)
    return null
  }
  if (response.body === null) return ''
  const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      return null
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return new TextDecoder().decode(bytes)
}
