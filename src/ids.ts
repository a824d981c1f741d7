import { randomUUID } from 'node:crypto'

/** A UUID in 8-4-4-4-12 hex form, any letter case (docs/api.md, "Query parameters"). No braces, no urn: prefix. */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UUID_RE = new RegExp(UUID_PATTERN)

export function isUuid(value: string): boolean {
  return UUID_RE.test(value)
}

/** Ids are stored and returned in lower case; input of any case is folded here. */
export function normaliseUuid(value: string): string {
  return value.toLowerCase()
}

export function newId(): string {
  return randomUUID()
}
