/**
 * Cuts the text of a data file (fed a chunk at a time) into its records, so that each can be
 * parsed by the native JSON.parse: the streaming tokeniser of @streamparser/json, run over
 * every byte, capped the import at about 80,000 folders/s; this scan and JSON.parse read
 * several times as fast (docs/performance.md, "Import benchmark").
 *
 * It decides nothing about the file's validity. A record is a value directly inside an array
 * that is itself directly inside the file's outer object; its text goes to `record`. All the
 * rest of the text (the outer object, its keys, the separators) goes to `outer`, with each
 * record replaced by ` 0`, for the streaming parser to check the file's shape and syntax as
 * before; `outer` is called when a record array opens (so the caller knows its key before
 * its first record) and on `flush`. Per record it also counts the colons outside strings:
 * in well-formed JSON one per key, so a record whose parsed value has fewer keys had a key
 * given twice (which JSON.parse silently drops).
 */

export interface SplitterHandlers {
  /** Text of the file outside records, in order, records replaced by `0`. */
  outer(text: string): void
  /** A record array opened: `outer` has just been given the text up to its `[`. */
  arrayOpened(): void
  /** One record's text, and the number of colons in it outside strings. */
  record(text: string, colons: number): void
}

const QUOTE = 0x22
const COLON = 0x3a
const COMMA = 0x2c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d

const isWhitespace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/** A scalar record (number, true, false, null, or junk) ends at the first of these. */
const endsScalar = (c: number) =>
  isWhitespace(c) ||
  c === COMMA ||
  c === CLOSE_BRACKET ||
  c === CLOSE_BRACE ||
  c === OPEN_BRACE ||
  c === OPEN_BRACKET ||
  c === QUOTE ||
  c === COLON

const enum Reading {
  None,
  Container,
  String,
  Scalar,
}

export class RecordSplitter {
  /** open containers outside strings */
  private depth = 0
  /** the opening characters of the containers at depth 1 and 2 */
  private readonly opened: number[] = [0, 0, 0]
  private inString = false
  private escaped = false
  private record: Reading = Reading.None
  private colons = 0
  /** the open record's text from earlier chunks */
  private carry = ''
  private outerText = ''

  constructor(private readonly handlers: SplitterHandlers) {}

  /** Whether a record is being read (its start seen, its end not yet). */
  get inRecord(): boolean {
    return this.record !== Reading.None
  }

  /** Whether the next value at depth 2 is a record: inside an array inside the outer object. */
  private atRecordLevel(): boolean {
    return this.depth === 2 && this.opened[1] === OPEN_BRACE && this.opened[2] === OPEN_BRACKET
  }

  write(text: string): void {
    const length = text.length
    let outerStart = 0
    let recordStart = this.record === Reading.None ? -1 : 0
    /** the next backslash at or after the position last looked from (length: none) */
    let backslash = -1
    for (let i = 0; i < length; i++) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false
          continue
        }
        // Skips to the string's end by native search: most of the file is inside strings.
        if (backslash < i) {
          backslash = text.indexOf('\\', i)
          if (backslash === -1) backslash = length
        }
        const quote = text.indexOf('"', i)
        const stop = quote === -1 ? length : quote
        if (backslash < stop) {
          this.escaped = true
          i = backslash
        } else if (quote === -1) {
          break
        } else {
          i = quote
          this.inString = false
          if (this.record === Reading.String) {
            this.endRecord(text, recordStart, i + 1)
            outerStart = i + 1
          }
        }
        continue
      }
      const c = text.charCodeAt(i)
      if (this.record === Reading.Scalar) {
        if (!endsScalar(c)) continue
        this.endRecord(text, recordStart, i)
        outerStart = i
      } else if (this.record === Reading.Container) {
        if (c === QUOTE) this.inString = true
        else if (c === COLON) this.colons++
        else if (c === OPEN_BRACE || c === OPEN_BRACKET) this.depth++
        else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
          if (--this.depth === 2) {
            this.endRecord(text, recordStart, i + 1)
            outerStart = i + 1
          }
        }
        continue
      }
      // Outside records.
      if (isWhitespace(c) || c === COMMA) continue
      if (c !== CLOSE_BRACKET && c !== CLOSE_BRACE && this.atRecordLevel()) {
        this.outerText += text.slice(outerStart, i)
        recordStart = i
        this.colons = 0
        if (c === OPEN_BRACE || c === OPEN_BRACKET) {
          this.record = Reading.Container
          this.depth++
        } else if (c === QUOTE) {
          this.record = Reading.String
          this.inString = true
        } else {
          this.record = Reading.Scalar
        }
        continue
      }
      if (c === QUOTE) this.inString = true
      else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.depth++
        if (this.depth <= 2) this.opened[this.depth] = c
        if (this.atRecordLevel()) {
          this.outerText += text.slice(outerStart, i + 1)
          outerStart = i + 1
          this.flush()
          this.handlers.arrayOpened()
        }
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) this.depth--
    }
    if (this.record === Reading.None) this.outerText += text.slice(outerStart)
    else this.carry += text.slice(recordStart)
  }

  /** Ends the text: a scalar record at the very end is complete. */
  end(): void {
    if (this.record === Reading.Scalar) this.endRecord('', 0, 0)
    this.flush()
  }

  /** Hands the outer text gathered so far to `outer`. */
  flush(): void {
    if (this.outerText === '') return
    const text = this.outerText
    this.outerText = ''
    this.handlers.outer(text)
  }

  private endRecord(text: string, start: number, end: number): void {
    const record = this.carry === '' ? text.slice(start, end) : this.carry + text.slice(start, end)
    this.carry = ''
    this.record = Reading.None
    // Spaced, so that two records with nothing between them stay two values to the parser.
    this.outerText += ' 0'
    this.handlers.record(record, this.colons)
  }
}

/** Keys in a parsed value, counted through nested objects and arrays. */
export function keyCount(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0
  let count = 0
  if (Array.isArray(value)) {
    for (const item of value) count += keyCount(item)
    return count
  }
  for (const key in value) {
    count++
    const inner = (value as Record<string, unknown>)[key]
    if (typeof inner === 'object' && inner !== null) count += keyCount(inner)
  }
  return count
}
