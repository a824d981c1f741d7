import type { Command } from 'commander'
import { loadConfig } from '../../config.js'
import { fail } from '../run-command.js'

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP service (default 127.0.0.1:3000 on the embedded SQLite database)')
    .option('--db <url>', 'database URL (env DATABASE_URL)')
    .option('--host <host>', 'listen address (env HOST)')
    .option('--port <port>', 'listen port (env PORT)')
    .option('--log-level <level>', 'pino log level (env LOG_LEVEL)')
    .action(async (options: { db?: string; host?: string; port?: string; logLevel?: string }) => {
      try {
        const config = loadConfig(process.env, options)
        // Loaded here, not at the top: the other commands never pay for the HTTP stack.
        const { startServer } = await import('../../server.js')
        await startServer(config)
      } catch (error) {
        fail(error)
        // Handles opened before the failure (pool timers, signal listeners) must not keep us alive.
        process.exit()
      }
    })
}
