/**
 * The stored columns a listing is made of, on both backends: which of them a listing shows
 * (or that decide whether and where a row is listed), which the database derives, and which
 * no listing reads. A change to a listed column must move the owner's listing generation in
 * the writing transaction (the triggers of both migration sets), and an import, which copies
 * rows with those triggers lifted, replays their effect per owner (import-replay.ts). The
 * schema guard test reads the columns from the database itself and holds every one of them,
 * and the triggers, to this description: a column added to `folders` or `users` without an
 * entry here fails it.
 */

export interface ListingSource {
  /** the column naming the user whose listings a row appears in */
  owner: string
  /** shown by a listing, or deciding whether and where a row is listed: a change is a new generation */
  listed: readonly string[]
  /** kept by the triggers (counts, the generation itself): no other writer sets them */
  derived: readonly string[]
  /** read with the session on every request, before the cache: a change needs no generation */
  checkedPerRequest: readonly string[]
  /** read by no listing: a change leaves the generation alone */
  unlisted: readonly string[]
}

export const LISTING_SOURCES = {
  users: {
    owner: 'id',
    // the `owner` object of every folder listed
    listed: ['id', 'username', 'avatar_url'],
    derived: ['root_folder_count', 'listing_generation'],
    checkedPerRequest: ['is_suspended'],
    unlisted: ['email', 'password_hash', 'created_at', 'updated_at'],
  },
  folders: {
    owner: 'owner_id',
    listed: ['id', 'name', 'folder_id', 'owner_id', 'is_deleted', 'created_at', 'updated_at'],
    // the `total` of the folder's own listing, kept by the count triggers; the natural
    // order's sort key, cleared by a trigger when the name changes without it and completed
    // by the service before a natural listing (migration 009): a function of `name`
    derived: ['child_count', 'name_key'],
    checkedPerRequest: [],
    unlisted: [],
  },
} as const satisfies Record<string, ListingSource>

export type ListingTable = keyof typeof LISTING_SOURCES
