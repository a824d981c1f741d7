import type { FolderListBody } from '../schemas/folder.js'

/**
 * The JSON text of a listing page, written field by field in FolderList's order: the same
 * bytes the route's 200 schema serialiser writes (test/property/folder-list-json.test.ts
 * compares them over arbitrary pages), at a fraction of its cost on an uncached page. Like
 * the schema serialiser, it writes only FolderList's fields, so nothing else on the objects
 * can leak. A string that needs escaping goes through JSON.stringify, which escapes exactly
 * as the schema serialiser does (it falls back to JSON.stringify for anything it would
 * escape); the others (ids, timestamps, most names) are written between quotes as they are.
 */

type Folder = FolderListBody['folders'][number]
type Owner = Folder['owner']

/** What JSON.stringify would escape: quote, backslash, control characters, lone surrogate halves. */
// eslint-disable-next-line no-control-regex -- control characters are what JSON must escape
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/

/** JSON.stringify(value): half the cost on a page when most strings need no escape. */
export const quoted = (value: string): string =>
  NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`

export const nullable = (value: string | null): string => (value === null ? 'null' : quoted(value))

export const ownerJson = ({ id, username, avatar_url }: Owner): string =>
  `{"id":${quoted(id)},"username":${quoted(username)},"avatar_url":${nullable(avatar_url)}}`

/** A folder's JSON (schema Folder), its owner's already written as `ownerText`. */
export const folderJson = (folder: Folder, ownerText: string): string =>
  '{"id":' +
  quoted(folder.id) +
  ',"name":' +
  quoted(folder.name) +
  ',"folder_id":' +
  nullable(folder.folder_id) +
  ',"owner":' +
  ownerText +
  ',"created_at":' +
  quoted(folder.created_at) +
  ',"updated_at":' +
  quoted(folder.updated_at) +
  '}'

export function folderListJson({ folders, total, page, limit }: FolderListBody): string {
  let text = '{"folders":['
  // A page's folders share one owner object (listing/listing.ts): its text is written once.
  let owner: Owner | undefined
  let ownerText = ''
  for (let i = 0; i < folders.length; i++) {
    const folder = folders[i] as Folder
    if (folder.owner !== owner) {
      owner = folder.owner
      ownerText = ownerJson(owner)
    }
    text += (i === 0 ? '' : ',') + folderJson(folder, ownerText)
  }
  return `${text}],"total":${total},"page":${page},"limit":${limit}}`
}
