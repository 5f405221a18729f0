import closeWithGrace from 'close-with-grace'
import { loadConfig, type Config, type ConfigError } from '../config.js'
import { createGateway, gatewayLogger } from './index.js'

let config: Config
try {
  config = loadConfig()
} catch (err) {
  // One clear line naming the variable, no stack trace.
  console.error((err as ConfigError).message)
  process.exit(1)
}

const log = gatewayLogger(config)
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
  await gateway.listen(config.GATEWAY_PORT, config.HOST)
} catch (err) {
  console.error(`Could not listen on GATEWAY_PORT ${config.GATEWAY_PORT}: ${(err as Error).message}`)
  await gateway.close()
  process.exit(1)
}
