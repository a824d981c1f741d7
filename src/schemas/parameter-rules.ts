import { MAX_WAIT_SECONDS } from '../api/limits.js'

/**
 * The human wording of each query parameter's rule, for the `detail` of a 400 (docs/api.md
 * "Errors"): "Query parameter 'limit' must be ...". One table per endpoint, since the same
 * name can mean another thing on another route (a changes `cursor` is not a listing's
 * continuation token).
 */

export type ParameterRules = Readonly<Record<string, string>>

/** GET /v1/folders (and any route without rules of its own). */
export const LISTING_PARAMETER_RULES = {
  folder_id: 'must be a UUID in 8-4-4-4-12 hex form, given once',
  page: 'must be a whole number from 1 to 2147483647 in decimal digits, given once',
  limit: 'must be a whole number of at least 1 in decimal digits, given once',
  cursor:
    'must be a continuation token exactly as this service wrote it into a Link header, for the same user and folder, given once',
  order: 'must be name or name_natural, given once',
} as const satisfies ParameterRules

/** GET /v1/folders/changes: its cursor comes from the feed, not from a page's links. */
export const CHANGES_PARAMETER_RULES = {
  ...LISTING_PARAMETER_RULES,
  cursor:
    'must be a changes cursor exactly as an answer of this endpoint or a listing\'s rel="changes" link gave it, for the same user and folder, given once',
  wait: `must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS} in decimal digits, given once`,
} as const satisfies ParameterRules

/** GET /v1/folders/tree: its cursor comes from its own answers. */
export const TREE_PARAMETER_RULES = {
  ...CHANGES_PARAMETER_RULES,
  root: 'must be a UUID in 8-4-4-4-12 hex form, given once',
  cursor:
    'must be a tree cursor exactly as an answer of this endpoint gave it, for the same user and root, given once',
} as const satisfies ParameterRules
