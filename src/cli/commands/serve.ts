import cluster from 'node:cluster'
import type { Command } from 'commander'
import { loadConfig, loadWorkers } from '../../config.js'
import { fail } from '../run-command.js'

interface ServeOptions {
  db?: string
  host?: string
  port?: string
  logLevel?: string
  folderBrowser: boolean
  workers?: string
}

export function registerServeCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP service (default 127.0.0.1:3000 on the embedded SQLite database)')
    .option('--db <url>', 'database URL (env DATABASE_URL)')
    .option('--host <host>', 'listen address (env HOST)')
    .option('--port <port>', 'listen port (env PORT)')
    .option('--log-level <level>', 'pino log level (env LOG_LEVEL)')
    .option('--workers <n|auto>', 'processes serving the port; auto: one per core (env WORKERS, default 1)')
    .option(
      '--no-folder-browser',
      'serve the API alone, without the folder browser at / (env FOLDER_BROWSER=off)',
    )
    .action(async (options: ServeOptions) => {
      try {
        // commander sets folderBrowser to true unless the flag is given; only the flag may
        // override the environment.
        const { folderBrowser, ...rest } = options
        const config = loadConfig(process.env, {
          ...rest,
          ...(folderBrowser ? {} : { folderBrowser: false }),
        })
        const workers = loadWorkers(process.env, options.workers)
        if (workers > 1 && cluster.isPrimary) {
          const { runPrimary } = await import('../../process/cluster.js')
          process.exit(await runPrimary(config, workers))
        }
        // Loaded here, not at the top: the other commands never pay for the HTTP stack.
        const { startServer } = await import('../../process/server.js')
        await startServer(config)
      } catch (error) {
        fail(error)
        // Handles opened before the failure (pool timers, signal listeners) must not keep us alive.
        process.exit()
      }
    })
}
