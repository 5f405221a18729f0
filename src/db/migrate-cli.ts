import pino from 'pino'
import { describeConfigError, loadConfig } from '../config.js'
import { developmentEnv } from '../dev-env.js'
import { provideDatabase } from '../mode.js'
import { runMigrations } from './migrate.js'

try {
  developmentEnv()
  const config = loadConfig()
  // DATABASE_URL, or the embedded PostgreSQL (started for the migration, stopped after).
  const database = await provideDatabase(config, pino({ level: config.LOG_LEVEL }))
  try {
    // A session connection: DATABASE_MIGRATION_URL when DATABASE_URL is a transaction pooler.
    await runMigrations(config.DATABASE_MIGRATION_URL ?? database.url)
  } finally {
    await database.stop()
  }
  console.log('migrations applied')
} catch (err) {
  console.error(describeConfigError(err))
  process.exit(1)
}
