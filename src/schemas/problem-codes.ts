/**
 * The `code` of every problem the service answers (docs/api.md, "Errors"). A module of its
 * own, free of dependencies, because the typed client loads it in browsers too.
 */
export const PROBLEM_CODES = [
  'INVALID_INPUT',
  'UNAUTHORIZED',
  'FROZEN_ACCOUNT',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'RATE_LIMITED',
  'CURSOR_EXPIRED',
  'UNAVAILABLE',
  'INTERNAL',
] as const

export type ProblemCode = (typeof PROBLEM_CODES)[number]
