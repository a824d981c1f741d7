// Writes docs/configuration.md's settings table and .env.example from SETTINGS in
// src/config.ts. Usage: npm run docs:config
import { readFileSync, writeFileSync } from 'node:fs'
import { REPO_ROOT } from '../helpers/repository/markdown.js'
import { CONFIGURATION_DOC, ENV_EXAMPLE, configurationDoc, envExample } from './config-docs.js'

const doc = `${REPO_ROOT}${CONFIGURATION_DOC}`
writeFileSync(doc, await configurationDoc(readFileSync(doc, 'utf8')))
writeFileSync(`${REPO_ROOT}${ENV_EXAMPLE}`, envExample())
process.stdout.write(`wrote ${CONFIGURATION_DOC} and ${ENV_EXAMPLE}\n`)
