import closeWithGrace from 'close-with-grace'
import pino from 'pino'
import { buildApp } from './app.js'
import { ConfigError, isSingleProcess, listenHost, loadConfig } from './config.js'
import { describeDevSecrets, developmentEnv } from './dev-env.js'
import { limitHeapGrowth, releaseMemoryWhenIdle } from './heap.js'
import { provideDatabase } from './mode.js'

// A local .env and, in development, generated secrets under PARLEY_DIR (src/dev-env.ts).
const secrets = developmentEnv()

let config
try {
  config = loadConfig()
} catch (err) {
  // One clear line naming the variable, no stack trace.
  console.error((err as ConfigError).message)
  process.exit(1)
}

limitHeapGrowth(config.HEAP_GROWING_PERCENT)

// The lines before the app exists (secrets, the embedded database) go to the same JSON log.
const log = pino({ level: config.LOG_LEVEL })
releaseMemoryWhenIdle(config.HEAP_RELEASE_IDLE_MS, (release) => log.debug(release, 'released idle memory'))
if (secrets) log.info({ file: secrets.file }, describeDevSecrets(secrets))

// DATABASE_URL, or an embedded PostgreSQL of our own (src/mode.ts decides).
const database = await provideDatabase(config, log).catch((err: Error) => {
  console.error(`Could not start the embedded PostgreSQL: ${err.message}`)
  process.exit(1)
})
process.env.DATABASE_URL = database.url

const fail = async (message: string) => {
  console.error(message)
  await database.stop()
  process.exit(1)
}

try {
  // Migrations need a session (advisory lock): DATABASE_MIGRATION_URL when DATABASE_URL is a pooler.
  // Imported only to migrate: the migrator loads drizzle-orm, which the serving process never needs
  // (src/db/vocabulary.ts says what it costs).
  if (config.MIGRATE_ON_START) await (await import('./db/migrate.js')).runMigrations(config.DATABASE_MIGRATION_URL ?? database.url)
} catch (err) {
  await fail(`Could not apply migrations to DATABASE_URL: ${(err as Error).message}`)
}

const app = await buildApp({ env: process.env }).catch((err: Error) => fail(`Could not start: ${err.message}`))
if (!app) process.exit(1)

// SIGTERM / SIGINT: stop accepting, let in-flight requests finish, close pools, stop an embedded
// database last, exit 0.
closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'closing after an error')
  else app.log.info({ signal }, 'shutting down')
  await app.close()
  await database.stop()
})

try {
  await app.listen({ port: config.PORT, host: listenHost(config) })
} catch (err) {
  await app.close()
  await fail(`Could not listen on PORT ${config.PORT}: ${(err as Error).message}`)
}
if (isSingleProcess(config)) {
  app.log.info('single-process mode (no REDIS_URL): the real-time gateway is on this port, limits and presence are kept in memory')
}
