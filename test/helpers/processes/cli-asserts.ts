import assert from 'node:assert/strict'
import type { CliResult } from './cli.js'

/** What a command-line run must look like (README "Command line"), with the run in every message. */

export function describeRun(args: string[], result: CliResult): string {
  return `folder-service ${args.join(' ')}\nexit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`
}

/** Exit 0 and nothing on stderr. */
export function assertOk(result: CliResult, args: string[] = []): void {
  assert.equal(result.code, 0, describeRun(args, result))
  assert.equal(result.stderr, '', describeRun(args, result))
}

/**
 * README "Command line": a non-zero exit and exactly one line on stderr, with no stack trace;
 * `pattern` (when given) must match that line.
 */
export function assertOneLineError(result: CliResult, pattern?: RegExp, args: string[] = []): string {
  const context = describeRun(args, result)
  assert.notEqual(result.code, 0, context)
  assert.notEqual(result.code, null, context)
  const lines = result.stderr.split('\n').filter((line) => line.trim() !== '')
  assert.equal(lines.length, 1, `expected exactly one stderr line\n${context}`)
  assert.doesNotMatch(result.stderr, /^\s+at /m, context)
  const line = lines[0] as string
  if (pattern !== undefined) assert.match(line, pattern, context)
  return line
}

export const UUID_LINE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The one id a creating command prints (lower-case UUID on a line of its own). */
export function printedId(result: CliResult, args: string[] = []): string {
  assertOk(result, args)
  const id = result.stdout.trim()
  assert.match(id, UUID_LINE, describeRun(args, result))
  return id
}
