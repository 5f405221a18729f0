import closeWithGrace from 'close-with-grace'
import { isEmbeddedDatabase, isSingleProcess, loadConfig, type Config, type ConfigError } from '../config.js'
import { developmentEnv } from '../dev-env.js'
import { limitHeapGrowth, releaseMemoryWhenIdle } from '../heap.js'
import { createGateway, gatewayLogger } from './standalone.js'

developmentEnv() // .env and development secrets, as npm start reads them
let config: Config
try {
  config = loadConfig()
} catch (err) {
  // One clear line naming the variable, no stack trace.
  console.error((err as ConfigError).message)
  process.exit(1)
}
limitHeapGrowth(config.HEAP_GROWING_PERCENT)
// A gateway of its own shares the API's Redis and database; without them it runs inside npm start.
if (isSingleProcess(config) || isEmbeddedDatabase(config)) {
  console.error('npm run gateway needs REDIS_URL and DATABASE_URL (the servers the API uses); without them, npm start serves the gateway on its own port (single-process mode)')
  process.exit(1)
}

const log = gatewayLogger(config)
releaseMemoryWhenIdle(config.HEAP_RELEASE_IDLE_MS, (release) => log.debug(release, 'released idle memory'))
const gateway = await createGateway({ config, logger: log }).catch((err: Error) => {
  console.error(`Could not start the gateway: ${err.message}`)
  process.exit(1)
})

// SIGTERM / SIGINT: stop accepting, disconnect sockets (clients reconnect to another gateway),
// close Redis and the pool, exit 0.
closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) log.error({ err }, 'closing after an error')
  else log.info({ signal }, 'shutting down')
  await gateway.close()
})

try {
  await gateway.listen(config.GATEWAY_PORT)
} catch (err) {
  console.error(`Could not listen on GATEWAY_PORT ${config.GATEWAY_PORT}: ${(err as Error).message}`)
  await gateway.close()
  process.exit(1)
}
