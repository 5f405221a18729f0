import { createHash, randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { migrationsFolder, runMigrations } from '../../src/db/migrate.js'

/** The machine's PostgreSQL (STACK.md); TEST_DATABASE_ADMIN_URL overrides it. */
export const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return url.toString()
}

/** The template's name changes with the migrations, so a changed schema never reuses an old one. */
export function templateName(): string {
  const hash = createHash('sha256')
  for (const f of readdirSync(migrationsFolder, { recursive: true }).map(String).sort()) {
    if (f.endsWith('.sql') || f.endsWith('.json')) hash.update(f).update(readFileSync(join(migrationsFolder, f)))
  }
  return `parley_tpl_${hash.digest('hex').slice(0, 12)}`
}

const admin = () => postgres(ADMIN_URL, { max: 1, onnotice: () => {} })

/** Creates and migrates the template database once; parallel callers wait on an advisory lock. */
export async function ensureTemplate(): Promise<string> {
  const name = templateName()
  const sql = admin()
  try {
    await sql`SELECT pg_advisory_lock(4242001)`
    const [row] = await sql`SELECT 1 FROM pg_database WHERE datname = ${name}`
    if (!row) {
      const building = `${name}_building`
      await sql.unsafe(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`)
      await sql.unsafe(`CREATE DATABASE ${building}`)
      await runMigrations(databaseUrl(building), { createDatabase: false })
      await sql.unsafe(`ALTER DATABASE ${building} RENAME TO ${name}`)
    }
    await sql`SELECT pg_advisory_unlock(4242001)`
  } finally {
    await sql.end()
  }
  return name
}

/** A fresh migrated database for one test file (or one app), dropped by the returned function. */
export async function createTestDatabase(): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const template = await ensureTemplate()
  const name = `parley_t_${randomBytes(6).toString('hex')}`
  const sql = admin()
  try {
    await sql.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`)
  } finally {
    await sql.end()
  }
  return {
    name,
    url: databaseUrl(name),
    drop: async () => {
      const s = admin()
      try {
        await s.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      } finally {
        await s.end()
      }
    },
  }
}
