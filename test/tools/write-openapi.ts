// Writes the OpenAPI document exactly as the app serves it at /v1/openapi.json, for the
// linters (npm run lint:openapi). Usage: node --import tsx test/tools/write-openapi.ts OUTPUT_FILE
import { writeFileSync } from 'node:fs'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import type { ServingStore } from '../../src/store/store.js'

const output = process.argv[2]
if (output === undefined) {
  process.stderr.write('usage: node --import tsx test/tools/write-openapi.ts OUTPUT_FILE\n')
  process.exit(2)
}
// The document comes from the routes alone: no request reaches the store, so none is opened.
const noStore = {} as ServingStore
const app = await buildApp({ store: noStore, config: loadConfig({}), logger: false })
try {
  const response = await app.inject('/v1/openapi.json')
  if (response.statusCode !== 200) throw new Error(`/v1/openapi.json answered ${response.statusCode}`)
  writeFileSync(output, `${JSON.stringify(response.json(), null, 2)}\n`)
} finally {
  await app.close()
}
