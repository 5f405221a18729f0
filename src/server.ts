import { existsSync } from 'node:fs'
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig } from './config.js'
import { runMigrations } from './db/migrate.js'

// Development convenience: a local .env fills in variables the environment does not set.
// Production sets real environment variables (which always win); tests pass theirs explicitly.
if (process.env.NODE_ENV !== 'test' && existsSync('.env')) process.loadEnvFile('.env')

let config
try {
  config = loadConfig()
} catch (err) {
  // One clear line naming the variable, no stack trace.
  console.error((err as ConfigError).message)
  process.exit(1)
}

try {
  if (config.MIGRATE_ON_START) await runMigrations(config.DATABASE_URL)
} catch (err) {
  console.error(`Could not apply migrations to DATABASE_URL: ${(err as Error).message}`)
  process.exit(1)
}

const app = await buildApp({ env: process.env }).catch((err: Error) => {
  console.error(`Could not start: ${err.message}`)
  process.exit(1)
})

// SIGTERM / SIGINT: stop accepting, let in-flight requests finish, close pools, exit 0.
closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'closing after an error')
  else app.log.info({ signal }, 'shutting down')
  await app.close()
})

await app.listen({ port: config.PORT, host: config.HOST })
