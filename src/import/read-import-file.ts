import { printable, quoted } from '../printable.js'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { Tokenizer, TokenParser, TokenType, type ParsedTokenInfo } from '@streamparser/json'
import { ImportError, type ImportItem, type ImportKind } from '../store/store.js'
import { keyCount, RecordSplitter, SplitterBoundError } from './record-splitter.js'
import { isImportKind, validateRecord } from './validate-import.js'

/**
 * Reads a data file (docs/api.md "Import format") as a stream of validated records, a batch per
 * chunk read, with memory bounded whatever the file's size: each record's text is cut out
 * (record-splitter.ts) and parsed on its own, and nothing else of the file is kept; a
 * record, key or value beyond the splitter's bounds is refused as soon as it passes them.
 * A record at fault throws ImportError naming it (`folders[1834221]: ...`) as soon as it is
 * read; so does a file that is not an object of the four arrays.
 */

/** Bytes per read: a batch is the records these bytes complete (a few thousand). */
export const READ_CHUNK_BYTES = 1 << 20

/** How far the reading has come; updated as the file is read, for progress displays. */
export interface ReadProgress {
  readonly totalBytes: number
  bytesRead: number
  records: number
}

class ImportFileError extends Error {
  override readonly name = 'ImportFileError'
}

const FILE_SHAPE = 'must be a JSON object of the arrays users, sessions, folders and files'

/**
 * Watches the tokens of the file's outer object, which the parser does not assemble: only
 * the four known keys, each once, each holding an array. Records are depth 2.
 */
class OuterShape {
  private depth = 0
  private started = false
  private expectArray = false
  private kind: ImportKind | null = null
  private readonly seen = new Set<string>()

  get currentKind(): ImportKind | null {
    return this.kind
  }

  check({ token, value }: ParsedTokenInfo): void {
    if (!this.started) {
      if (token !== TokenType.LEFT_BRACE) throw new ImportError('file', FILE_SHAPE)
      this.started = true
    } else if (this.depth === 1) {
      if (this.expectArray && token !== TokenType.COLON) {
        if (token !== TokenType.LEFT_BRACKET) throw new ImportError(this.kind ?? 'file', 'must be an array')
        this.expectArray = false
      } else if (token === TokenType.STRING) {
        if (!isImportKind(value))
          throw new ImportError('file', `unknown key ${quoted(String(value))}: ${FILE_SHAPE}`)
        if (this.seen.has(value)) throw new ImportError('file', `the key ${value} appears twice`)
        this.seen.add(value)
        this.kind = value
        this.expectArray = true
      }
    }
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) this.depth++
    else if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) this.depth--
  }

  end(): void {
    if (!this.started) throw new ImportError('file', `is empty: ${FILE_SHAPE}`)
  }
}

/**
 * The first key given twice in one object of a record's text, or null. JSON.parse keeps the
 * last, so `"is_suspended": true, "is_suspended": false` would bring a frozen account in
 * unfrozen without a word. Only run on a record whose parsed value lost keys (keyCount), to
 * name the key.
 */
function duplicateKey(recordText: string): string | null {
  /** per open container: an object's keys (null for an array), and whether a key is next */
  const open: { keys: Set<string> | null; expectKey: boolean }[] = []
  let found: string | null = null
  const tokenizer = new Tokenizer()
  tokenizer.onToken = ({ token, value }) => {
    const inner = open.at(-1)
    if (token === TokenType.LEFT_BRACE) open.push({ keys: new Set(), expectKey: true })
    else if (token === TokenType.LEFT_BRACKET) open.push({ keys: null, expectKey: false })
    else if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) open.pop()
    else if (inner?.keys == null) return
    else if (token === TokenType.COMMA) inner.expectKey = true
    else if (token === TokenType.STRING && inner.expectKey) {
      inner.expectKey = false
      const key = String(value)
      if (inner.keys.has(key)) found ??= key
      inner.keys.add(key)
    }
  }
  tokenizer.write(recordText)
  return found
}

/**
 * The length of the longest prefix of `bytes` that is well-formed UTF-8 (an incomplete
 * character at its very end counts as well formed: the next chunk completes it).
 */
function wellFormedPrefix(bytes: Uint8Array): number {
  const fits = (length: number) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, length), { stream: true })
      return true
    } catch {
      return false
    }
  }
  let [low, high] = [0, bytes.length]
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (fits(middle)) low = middle
    else high = middle - 1
  }
  return low
}

/** The file's size, or ImportFileError naming the path (missing, unreadable, a directory). */
export async function importFileSize(path: string): Promise<number> {
  try {
    const info = await stat(path)
    if (!info.isFile()) throw new ImportFileError(`cannot read ${path}: not a file`)
    return info.size
  } catch (error) {
    if (error instanceof ImportFileError) throw error
    throw new ImportFileError(
      `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    )
  }
}

/**
 * The validated records of the file at `path`, in file order, a batch per chunk read.
 * Defaults (ids, timestamps) use `now`. `progress` is updated after each chunk.
 */
export async function* readImportFile(
  path: string,
  now: number,
  progress: ReadProgress = { totalBytes: 0, bytesRead: 0, records: 0 },
): AsyncGenerator<ImportItem[]> {
  const outer = new OuterShape()
  let batch: ImportItem[] = []
  /** the index of the next record in the current array */
  let nextIndex = 0
  // The text around the records (each replaced by a placeholder value) is checked by the
  // streaming parser: the file's shape by OuterShape, its syntax by the token parser.
  const tokenizer = new Tokenizer()
  // Each placeholder is emitted and forgotten (keepStack: false), so the parser holds nothing.
  const parser = new TokenParser({ paths: ['$.*.*'], keepStack: false })
  parser.onValue = () => undefined
  tokenizer.onToken = (info) => {
    outer.check(info)
    parser.write(info)
  }
  const notJson = (error: unknown) => {
    if (error instanceof ImportError || error instanceof ImportFileError) return error
    if (error instanceof SplitterBoundError) {
      return new ImportError(error.inRecord ? openRecord() : 'file', error.message)
    }
    return new ImportFileError(`${path} is not valid JSON: ${(error as Error).message}`)
  }
  const splitter = new RecordSplitter({
    outer: (text) => tokenizer.write(text),
    arrayOpened: () => (nextIndex = 0),
    record: (text, colons) => {
      const index = nextIndex++
      const kind = outer.currentKind
      // A fault of the text before this record is the first fault: it is named instead.
      const fail = (error: Error) => {
        splitter.flush()
        throw error
      }
      if (kind === null) return fail(new ImportError('file', FILE_SHAPE))
      let value: unknown
      try {
        value = JSON.parse(text)
      } catch (error) {
        // V8 may quote the record's text: escaped and cut like any data in a message.
        const reason = printable((error as Error).message, 200)
        return fail(notJson(new Error(`${kind}[${index}]: ${reason}`)))
      }
      if (keyCount(value) !== colons) {
        const key = duplicateKey(text)
        if (key !== null) fail(new ImportError(`${kind}[${index}]`, `the key ${quoted(key)} appears twice`))
      }
      try {
        batch.push(validateRecord(kind, index, value, now))
      } catch (error) {
        fail(error as Error)
      }
    },
  })
  const openRecord = () => {
    const kind = outer.currentKind
    return kind !== null && splitter.inRecord ? `${kind}[${nextIndex}]` : 'file'
  }
  // Bytes that are not UTF-8 are refused, naming the record they are in, rather than turned
  // into U+FFFD without a word (a name would not come back as the file had it).
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const decode = (chunk: Buffer, end: boolean): string => {
    try {
      return decoder.decode(chunk, { stream: !end })
    } catch {
      // Read up to the bad byte, so that the record it is in is the one open.
      const good = wellFormedPrefix(chunk)
      try {
        splitter.write(new TextDecoder().decode(chunk.subarray(0, good)))
        splitter.flush()
      } catch {
        // the text before the bad byte is malformed too: the UTF-8 fault is still named
      }
      throw new ImportError(openRecord(), `not valid UTF-8 (byte ${progress.bytesRead + good} of the file)`)
    }
  }

  const stream = createReadStream(path, { highWaterMark: READ_CHUNK_BYTES })
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      try {
        splitter.write(decode(chunk, false))
        splitter.flush()
      } catch (error) {
        throw notJson(error)
      }
      progress.bytesRead += chunk.length
      progress.records += batch.length
      if (batch.length > 0) {
        yield batch
        batch = []
      }
    }
    try {
      const rest = decode(Buffer.alloc(0), true)
      if (rest !== '') splitter.write(rest)
      splitter.end()
      tokenizer.end()
      if (!parser.isEnded) parser.end()
    } catch (error) {
      throw notJson(error)
    }
    outer.end()
  } catch (error) {
    if (error instanceof ImportError || error instanceof ImportFileError) throw error
    const code = (error as NodeJS.ErrnoException).code
    throw new ImportFileError(`cannot read ${path}: ${code ?? (error as Error).message}`)
  } finally {
    stream.destroy()
  }
  progress.records += batch.length
  if (batch.length > 0) yield batch
}
