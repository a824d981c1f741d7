#!/usr/bin/env node
import { Command } from 'commander'
import { registerAdminCommands } from './commands/admin.js'
import { registerDataCommands } from './commands/data.js'
import { registerFolderCommands } from './commands/folder.js'
import { registerServeCommand } from './commands/serve.js'
import { ERROR_PREFIX } from './run-command.js'
import { PACKAGE_VERSION } from '../package-version.js'

/** The `folder-service` command (README, "Command line"). */

const program = new Command('folder-service')
  .description('Folder listing service: serve GET /v1/folders and manage its data')
  .version(PACKAGE_VERSION, '-V, --version', 'print the version')
  .configureOutput({
    // Commander's own argument errors are already one line; they start like the commands'
    // own (run-command.ts), so every error of the command reads the same way.
    outputError: (text, write) => write(text.replace(/^error: /, ERROR_PREFIX)),
    writeErr: (text) => process.stderr.write(text),
  })

registerServeCommand(program)
registerDataCommands(program)
registerAdminCommands(program)
registerFolderCommands(program)

await program.parseAsync(process.argv)
