import type { FolderListBody } from '../schemas/folder.js'

/**
 * The JSON text of a listing page, written field by field in FolderList's order: the same
 * bytes the route's 200 schema serialiser writes (test/property/folder-list-json.test.ts
 * compares them over arbitrary pages), at a fraction of its cost on an uncached page. Like
 * the schema serialiser, it writes only FolderList's fields, so nothing else on the objects
 * can leak. Strings go through JSON.stringify, which escapes exactly as the schema
 * serialiser does (it falls back to JSON.stringify for anything it would escape).
 */

type Folder = FolderListBody['folders'][number]
type Owner = Folder['owner']

const nullable = (value: string | null): string => (value === null ? 'null' : JSON.stringify(value))

const ownerJson = ({ id, username, avatar_url }: Owner): string =>
  `{"id":${JSON.stringify(id)},"username":${JSON.stringify(username)},"avatar_url":${nullable(avatar_url)}}`

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
    text +=
      (i === 0 ? '{"id":' : ',{"id":') +
      JSON.stringify(folder.id) +
      ',"name":' +
      JSON.stringify(folder.name) +
      ',"folder_id":' +
      nullable(folder.folder_id) +
      ',"owner":' +
      ownerText +
      ',"created_at":' +
      JSON.stringify(folder.created_at) +
      ',"updated_at":' +
      JSON.stringify(folder.updated_at) +
      '}'
  }
  return `${text}],"total":${total},"page":${page},"limit":${limit}}`
}
