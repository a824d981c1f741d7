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
    // Commander's own argument errors are made one line (its suggestion for a typo comes on a
    // second), starting like the commands' own (run-command.ts): every error reads the same way.
    outputError: (text, write) =>
      write(
        text
          .replace(/^error: /, ERROR_PREFIX)
          .replace(/\n\(Did you mean (.*)\?\)\n?$/, ' (did you mean $1?)\n'),
      ),
    writeErr: (text) => process.stderr.write(text),
  })

registerServeCommand(program)
registerDataCommands(program)
registerAdminCommands(program)
registerFolderCommands(program)

await program.parseAsync(process.argv)
