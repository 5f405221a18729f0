import { describeConfigError, loadConfig } from '../config.js'
import { runMigrations } from './migrate.js'

try {
  const config = loadConfig()
  await runMigrations(config.DATABASE_URL)
  console.log('migrations applied')
} catch (err) {
  console.error(describeConfigError(err))
  process.exit(1)
}
