#!/usr/bin/env node
import { Command } from 'commander'
import { registerAdminCommands } from './commands/admin.js'
import { registerDataCommands } from './commands/data.js'
import { registerServeCommand } from './commands/serve.js'

/** The `folder-service` command (README, "Command line"). */

const program = new Command('folder-service')
  .description('Folder listing service: serve GET /v1/folders and manage its data')
  .configureOutput({
    // Commander's own argument errors are already one line; keep them on stderr.
    writeErr: (text) => process.stderr.write(text),
  })

registerServeCommand(program)
registerDataCommands(program)
registerAdminCommands(program)

await program.parseAsync(process.argv)
