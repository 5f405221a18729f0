import { fileURLToPath } from 'node:url'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'

export const migrationsFolder = fileURLToPath(new URL('../../migrations', import.meta.url))

/** Any fixed number: the key of the advisory lock that serialises migrations across replicas. */
const MIGRATION_LOCK_KEY = 7_201_842_517

/** Creates the database named in the URL when it is missing and the role may create databases. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl)
  const name = decodeURIComponent(url.pathname.slice(1))
  if (!name) return
  url.pathname = '/postgres'
  const admin = postgres(url.toString(), { max: 1, onnotice: () => {}, connect_timeout: 10 })
  try {
    const [row] = await admin`SELECT 1 AS ok FROM pg_database WHERE datname = ${name}`
    if (!row) {
      await admin.unsafe(`CREATE DATABASE "${name.replaceAll('"', '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err // 42P04: created meanwhile by another replica
      })
    }
  } finally {
    await admin.end({ timeout: 5 })
  }
}

/** Applies pending migrations under a session advisory lock, so replicas starting together do not race. */
export async function runMigrations(databaseUrl: string, opts: { createDatabase?: boolean } = {}): Promise<void> {
  if (opts.createDatabase !== false) await ensureDatabase(databaseUrl)
  const client = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 10 })
  try {
    await client`SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`
    try {
      await migrate(drizzle(client), { migrationsFolder })
    } finally {
      await client`SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`
    }
  } finally {
    await client.end({ timeout: 5 })
  }
}
