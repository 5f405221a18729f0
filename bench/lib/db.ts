import postgres from 'postgres'
import { useTextTypes, type Pool } from '../../src/db/client.js'

export type { Pool }

export function connect(url: string, max = 4): Pool {
  const sql = postgres(url, {
    max,
    onnotice: () => {},
    connect_timeout: 10,
    idle_timeout: 30,
    connection: { TimeZone: 'UTC' },
  })
  // As in the app: timestamps stay Postgres text (microseconds kept).
  return useTextTypes(sql)
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

/** The harness only ever creates and drops databases named like this. */
export const BENCH_DB_PATTERN = /^parley_bench_[a-z0-9_]+$/

function assertBenchName(name: string): void {
  if (!BENCH_DB_PATTERN.test(name)) throw new Error(`refusing to touch database ${name}: not a parley_bench_* name`)
}

export async function createDatabase(adminUrl: string, name: string): Promise<void> {
  assertBenchName(name)
  const admin = connect(withDatabase(adminUrl, 'postgres'), 1)
  try {
    await admin.unsafe(`CREATE DATABASE "${name}"`)
  } finally {
    await admin.end({ timeout: 5 })
  }
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  assertBenchName(name)
  const admin = connect(withDatabase(adminUrl, 'postgres'), 1)
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
  } finally {
    await admin.end({ timeout: 5 })
  }
}

export async function databaseExists(adminUrl: string, name: string): Promise<boolean> {
  const admin = connect(withDatabase(adminUrl, 'postgres'), 1)
  try {
    const rows = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`
    return rows.length > 0
  } finally {
    await admin.end({ timeout: 5 })
  }
}

export interface DroppedObjects {
  indexes: { table: string; name: string; def: string }[]
  foreignKeys: { table: string; name: string; def: string }[]
}

/**
 * Drops the secondary indexes and foreign keys of the tables about to be bulk loaded, keeping
 * their definitions from the catalog (whatever the migrations made, including indexes that land
 * later on other branches), so they are rebuilt once over the whole data set: one sorted build is
 * much faster than maintaining each index row by row, and no foreign key is checked per row.
 */
export async function dropSecondaryObjects(sql: Pool, tables: string[]): Promise<DroppedObjects> {
  const foreignKeys = await sql<{ table: string; name: string; def: string }[]>`
    SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS def
    FROM pg_constraint
    WHERE contype = 'f' AND (conrelid::regclass::text = ANY(${tables}) OR confrelid::regclass::text = ANY(${tables}))`
  const indexes = await sql<{ table: string; name: string; def: string }[]>`
    SELECT i.indrelid::regclass::text AS table, c.relname AS name, pg_get_indexdef(i.indexrelid) AS def
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid::regclass::text = ANY(${tables})
      AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`
  for (const fk of foreignKeys) await sql.unsafe(`ALTER TABLE ${fk.table} DROP CONSTRAINT "${fk.name}"`)
  for (const ix of indexes) await sql.unsafe(`DROP INDEX "${ix.name}"`)
  return { indexes: [...indexes], foreignKeys: [...foreignKeys] }
}

/** The PostgreSQL server's settings a run's numbers depend on (docs/deployment.md, "PostgreSQL settings"). */
export interface ServerSettings {
  version: string
  sharedBuffersMiB: number
  effectiveCacheSizeMiB: number
  workMemMiB: number
  maxConnections: number
}

export async function serverSettings(sql: Pool): Promise<ServerSettings> {
  const [row] = await sql<ServerSettings[]>`
    SELECT current_setting('server_version') AS version,
           pg_size_bytes(current_setting('shared_buffers'))::float8 / 1048576 AS "sharedBuffersMiB",
           pg_size_bytes(current_setting('effective_cache_size'))::float8 / 1048576 AS "effectiveCacheSizeMiB",
           pg_size_bytes(current_setting('work_mem'))::float8 / 1048576 AS "workMemMiB",
           current_setting('max_connections')::int AS "maxConnections"`
  return row!
}
