// Runs once before `tap`: builds the migrated template database every test file clones.
import { ensureTemplate } from './database.js'

const name = await ensureTemplate()
console.log(`test template database: ${name}`)
