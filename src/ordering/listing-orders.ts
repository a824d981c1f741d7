/**
 * The listing orders of the `order` parameter (docs/api.md "Order" and "Natural order"):
 * `name`, the default, by code point; `name_natural`, a file manager's order. One list for
 * the query schema, the Store and the typed client (no Node API: browsers load it too).
 */
export const LISTING_ORDERS = ['name', 'name_natural'] as const

export type ListingOrder = (typeof LISTING_ORDERS)[number]

export const DEFAULT_ORDER: ListingOrder = 'name'
