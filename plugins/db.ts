import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import fp from 'fastify-plugin'
import postgres from 'postgres'
import * as schema from '../src/db/schema.js'

export type Db = PostgresJsDatabase<typeof schema>
export type Sql = postgres.Sql

declare module 'fastify' {
  interface FastifyInstance {
    /** Drizzle over the pool: typed queries. */
    db: Db
    /** The postgres.js pool itself: raw SQL where drizzle gets in the way (row comparisons, COPY). */
    sql: Sql
  }
}

export function createSql(url: string, max = 10): Sql {
  return postgres(url, {
    max,
    connect_timeout: 5,
    idle_timeout: 60,
    onnotice: () => {},
    // Timestamps come back as Postgres text in UTC (drizzle's postgres-js driver turns off
    // the Date parser): microseconds survive, so cursors stay exact. src/time.ts formats them.
    connection: { TimeZone: 'UTC' },
  })
}

export default fp(
  async (app) => {
    const sql = createSql(app.config.DATABASE_URL, app.config.DATABASE_POOL_MAX)
    app.decorate('sql', sql)
    app.decorate('db', drizzle(sql, { schema }))
    app.addHook('onClose', async () => {
      await sql.end({ timeout: 5 })
    })
  },
  { name: 'db', dependencies: ['config'] },
)
