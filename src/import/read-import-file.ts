import { quoted } from '../printable.js'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { Tokenizer, TokenParser, TokenType, type ParsedTokenInfo } from '@streamparser/json'
import { ImportError, type ImportItem, type ImportKind } from '../store/store.js'
import { isImportKind, validateRecord } from './validate-import.js'

/**
 * Reads a data file (docs/api.md "Import format") as a stream of validated records, a batch per
 * chunk read, with memory bounded whatever the file's size: the streaming parser
 * (@streamparser/json) assembles one record at a time and nothing else of the file is kept.
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

export class ImportFileError extends Error {
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
 * Refuses a key given twice in one object of a record: JSON parsers keep the last, so
 * `"is_suspended": true, "is_suspended": false` would bring a frozen account in unfrozen
 * without a word. Tracks the keys of every object open inside the current record.
 */
class RecordKeys {
  private depth = 0
  /** per open object: the keys seen, and whether the next string token is a key */
  private readonly objects: { keys: Set<string>; expectKey: boolean }[] = []

  /** The duplicated key, or null. Records are at depth 2 (the outer object, its arrays). */
  check({ token, value }: ParsedTokenInfo): string | null {
    const open = this.objects.at(-1)
    if (token === TokenType.LEFT_BRACE) {
      this.depth++
      if (this.depth >= 3) this.objects.push({ keys: new Set(), expectKey: true })
    } else if (token === TokenType.LEFT_BRACKET) {
      this.depth++
    } else if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) {
      if (token === TokenType.RIGHT_BRACE && this.depth >= 3) this.objects.pop()
      this.depth--
    } else if (open !== undefined && this.objects.length === this.depth - 2) {
      if (token === TokenType.COMMA) open.expectKey = true
      else if (token === TokenType.STRING && open.expectKey) {
        open.expectKey = false
        const key = String(value)
        if (open.keys.has(key)) return key
        open.keys.add(key)
      }
    }
    return null
  }

  /** Whether a record is open (its tokens are being read). */
  get inRecord(): boolean {
    return this.depth >= 3
  }
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
  const recordKeys = new RecordKeys()
  let batch: ImportItem[] = []
  /** the index of the record being read in the current array: the last one emitted + 1 */
  let nextIndex = 0
  const openRecord = () => {
    const kind = outer.currentKind
    return kind !== null && recordKeys.inRecord ? `${kind}[${nextIndex}]` : 'file'
  }
  const tokenizer = new Tokenizer()
  // keepStack: false lets the parser forget each record once it is emitted.
  const parser = new TokenParser({ paths: ['$.*.*'], keepStack: false })
  tokenizer.onToken = (info) => {
    const kindBefore = outer.currentKind
    outer.check(info)
    if (outer.currentKind !== kindBefore) nextIndex = 0
    const duplicate = recordKeys.check(info)
    if (duplicate !== null) throw new ImportError(openRecord(), `the key ${quoted(duplicate)} appears twice`)
    parser.write(info)
  }
  parser.onValue = ({ value, key }) => {
    const kind = outer.currentKind
    if (kind === null || typeof key !== 'number') throw new ImportError('file', FILE_SHAPE)
    nextIndex = key + 1
    batch.push(validateRecord(kind, key, value, now))
  }
  const notJson = (error: unknown) =>
    error instanceof ImportError
      ? error
      : new ImportFileError(`${path} is not valid JSON: ${(error as Error).message}`)
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
        tokenizer.write(new TextDecoder().decode(chunk.subarray(0, good)))
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
        tokenizer.write(decode(chunk, false))
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
      if (rest !== '') tokenizer.write(rest)
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
