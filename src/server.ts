import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.js'
import type { Config } from './config.js'
import { openStore } from './store/open-store.js'

/**
 * The process side of the service (DESIGN habit 1): open the store, build the app, listen,
 * and on SIGTERM or SIGINT stop accepting connections, let in-flight requests finish, close
 * the database and exit 0; past shutdownTimeoutMs the process exits anyway.
 */
export async function startServer(config: Readonly<Config>): Promise<FastifyInstance> {
  const store = await openStore(config)
  const app = await buildApp({ store, config })
  app.addHook('onClose', () => store.close())

  closeWithGrace({ delay: config.shutdownTimeoutMs }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'stopping after an uncaught error')
    else app.log.info({ signal }, 'shutting down')
    await app.close()
  })

  try {
    await app.listen({ host: config.host, port: config.port })
  } catch (error) {
    await app.close()
    throw error
  }
  if ((await store.countUsers()) === 0) {
    app.log.info('the database has no users yet: run `npx folder-service seed --demo` to load a demo')
  }
  return app
}
