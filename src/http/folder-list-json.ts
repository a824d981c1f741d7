import type { FolderListBody } from '../schemas/folder.js'
import { folderJson, ownerJson, type Owner } from './folder-json.js'

/**
 * The JSON text of a listing page, written field by field in FolderList's order: the same
 * bytes the route's 200 schema serialiser writes (test/property/folder-list-json.test.ts
 * compares them over arbitrary pages), at a fraction of its cost on an uncached page. Like
 * the schema serialiser, it writes only FolderList's fields, so nothing else on the objects
 * can leak.
 */

export function folderListJson({ folders, total, page, limit }: FolderListBody): string {
  let text = '{"folders":['
  // A page's folders share one owner object (listing/listing.ts): its text is written once.
  let owner: Owner | undefined
  let ownerText = ''
  for (let i = 0; i < folders.length; i++) {
    const folder = folders[i] as FolderListBody['folders'][number]
    if (folder.owner !== owner) {
      owner = folder.owner
      ownerText = ownerJson(owner)
    }
    text += (i === 0 ? '' : ',') + folderJson(folder, ownerText)
  }
  return `${text}],"total":${total},"page":${page},"limit":${limit}}`
}
