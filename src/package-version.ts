import { createRequire } from 'node:module'

/** The version in package.json, which ships beside dist/ (package.json "files"). */
export const { version: PACKAGE_VERSION } = createRequire(import.meta.url)('../package.json') as {
  version: string
}
