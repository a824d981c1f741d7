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

/** 32 lower-case hex digits in the 8-4-4-4-12 form. */
export function uuidFromHex(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
