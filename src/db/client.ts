import postgres from 'postgres'

/**
 * The one database client (postgres.js) and its two types. Every query in Parley is postgres.js
 * tagged SQL through these types; drizzle only describes the schema (src/db/schema.ts) and writes
 * migrations (docs/architecture.md, "Data access").
 *
 * - `Pool`: the process's connection pool. It runs queries and opens transactions (`begin`).
 *   Contexts carry it (`ctx.sql`).
 * - `Sql`: what a query needs: the pool or an open transaction (`begin`'s callback argument).
 *   Query helpers take it, so they run the same inside or outside a transaction, without a cast.
 */
export type Pool = postgres.Sql
export type Sql = postgres.ISql
/** An open transaction (`begin`'s callback argument), where a savepoint can be taken (src/conversations/batch.ts). */
export type Transaction = postgres.TransactionSql
/** A piece of a statement built with the same tag (sql`pinned = ${pinned}`), embedded in another. */
export type Fragment = postgres.Fragment
/** A value bound to a `$n` of an `unsafe` statement (pg-boss's own SQL, src/jobs.ts). */
export type Parameter = postgres.ParameterOrJSON<never>
/** A statement not yet awaited, typed by its rows (EXPLAIN scripts plan exactly what a module runs). */
export type Query<Rows extends readonly object[]> = postgres.PendingQuery<Rows>

/** Type OIDs whose values stay Postgres text both ways: date, time, timestamp, timestamptz and arrays. */
const TIME_TYPES = [1082, 1083, 1114, 1184, 1115, 1182, 1185, 1231]
/** json, jsonb: values go in as the JSON text the caller wrote (`${JSON.stringify(x)}::jsonb`). */
const JSON_TYPES = [114, 3802]

/**
 * A pool of `max` connections; `settings` are extra run-time parameters every connection of it
 * starts with (the search pool's, src/search/search.ts SEARCH_SESSION). `prepare: false` behind a
 * transaction pooler (DATABASE_POOLER=transaction): PgBouncer 1.18 hands each transaction any
 * server connection, where a statement named on another one does not exist (docs/scaling.md).
 */
export function createSql(url: string, max = 10, settings: Record<string, string> = {}, prepare = true): Pool {
  const sql = postgres(url, {
    max,
    prepare,
    connect_timeout: 5,
    idle_timeout: 60,
    onnotice: () => {},
    // Timestamps come back as Postgres text in UTC: microseconds survive, so cursors stay exact
    // (a JS Date keeps milliseconds). src/time.ts formats them for the API.
    connection: { ...settings, TimeZone: 'UTC' },
  })
  useTextTypes(sql)
  return sql
}

/**
 * Timestamps in and out as text, JSON in as text: set on every pool Parley opens (the app, the
 * gateway, the benchmark and test scripts), so a row reads the same wherever it is read.
 */
export function useTextTypes(sql: Pool): Pool {
  const same = (x: unknown) => x
  for (const oid of TIME_TYPES) {
    sql.options.parsers[oid] = same
    sql.options.serializers[oid] = same
  }
  for (const oid of JSON_TYPES) sql.options.serializers[oid] = same
  return sql
}
