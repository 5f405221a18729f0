import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { runMigrations } from '../../src/db/migrate.js'
import { memberToken } from '../../test/helper.js'
import type { BenchRun } from './area.js'
import { onCleanup } from './cleanup.js'
import { connect, createDatabase, databaseExists, dropDatabase, type Pool } from './db.js'
import type { LoadOptions } from './load.js'
import { RESULTS_DIR as RESULTS, ROOT } from './paths.js'
import { fmtDuration, fmtInt, step } from './progress.js'
import { seed, type SeedResult, type SeedWorkspace } from './seed.js'
import { freePort, startChild } from './server.js'

/**
 * The bench database and the API on it, for bench/run.ts and the scripts that measure one
 * deployment against another on the same data (bench/replica-cost.ts).
 */
export interface Meta {
  seed: SeedResult
  conversations: number
}

export interface DatabaseOptions {
  /** A kept database to reuse (skips seeding). */
  db?: string
  adminUrl: string
  keepDb: boolean
  conversations: number
  seed: number
}

export interface ApiOptions extends LoadOptions {
  redisUrl: string
  apiDbParams?: string
  cpuProf: boolean
  /** Extra environment of the API (a deployment's settings, e.g. DATABASE_READ_URL). */
  env?: NodeJS.ProcessEnv
}

/** `npm run build` into a clean dist/ (the production build the API runs). */
export function buildApi() {
  step('building the API (npm run build, into a clean dist/)')
  // A stale compiled route file (renamed or deleted since) would still be autoloaded.
  rmSync(join(ROOT, 'dist'), { recursive: true, force: true })
  const b = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', process.stderr, process.stderr] })
  if (b.status !== 0) throw new Error('npm run build failed')
}

/** The bench database: reused (--db), or created, migrated and seeded (dropped at the end unless --keep-db). */
export async function prepareDatabase(opts: DatabaseOptions, dbName: string, dbUrl: string): Promise<{ sql: Pool; meta: Meta; timings: Record<string, number> }> {
  const timings: Record<string, number> = {}
  if (opts.db) {
    if (!(await databaseExists(opts.adminUrl, dbName))) throw new Error(`database ${dbName} does not exist`)
    const sql = connect(dbUrl, 8)
    onCleanup('close harness pool', () => sql.end({ timeout: 5 }))
    const [row] = await sql<{ data: Meta }[]>`SELECT data FROM bench_meta LIMIT 1`
    step(`reusing ${dbName} (${fmtInt(row.data.seed.conversations)} conversations, seeded earlier)`)
    return { sql, meta: row.data, timings }
  }
  step(`creating database ${dbName}`)
  await createDatabase(opts.adminUrl, dbName)
  if (!opts.keepDb) onCleanup(`drop database ${dbName}`, () => dropDatabase(opts.adminUrl, dbName).then(() => step(`dropped ${dbName}`)))
  else onCleanup('report kept database', () => step(`kept database ${dbName} (reuse: --db ${dbName}; drop: DROP DATABASE ${dbName})`))
  let t0 = Date.now()
  await runMigrations(dbUrl, { createDatabase: false })
  timings.migrate = (Date.now() - t0) / 1000
  const sql = connect(dbUrl, 8)
  onCleanup('close harness pool', () => sql.end({ timeout: 5 }))
  t0 = Date.now()
  const seeded = await seed(sql, { conversations: opts.conversations, seed: opts.seed })
  timings.seed = (Date.now() - t0) / 1000
  step(`seeded in ${fmtDuration(timings.seed)} (${fmtInt(seeded.conversations)} conversations, ${fmtInt(seeded.messages)} messages)`)
  const meta = { seed: seeded, conversations: opts.conversations }
  await sql`CREATE TABLE bench_meta (data jsonb NOT NULL)`
  await sql`INSERT INTO bench_meta (data) VALUES (${JSON.stringify(meta)}::jsonb)`
  return { sql, meta, timings }
}

/** The `ENV NODE_OPTIONS="..."` of the Dockerfile: the API runs as the image runs it. */
function imageNodeOptions(): string | undefined {
  return /^ENV NODE_OPTIONS="([^"]*)"/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))?.[1]
}

/** Starts `node dist/src/server.js` on the bench database with secrets of its own; cleans up its Redis keys at the end. */
export async function startApi(opts: ApiOptions, dbName: string, dbUrl: string, sql: Pool, meta: Meta, stamp: string): Promise<BenchRun> {
  const secrets = {
    AUTH_JWT_SECRET: `bench-jwt-${randomBytes(16).toString('hex')}`,
    VISITOR_SESSION_SECRET: `bench-visitor-${randomBytes(16).toString('hex')}`,
    CURSOR_SECRET: `bench-cursor-${randomBytes(16).toString('hex')}`,
    PROVIDER_A_WEBHOOK_SECRET: `whsec_bench_${randomBytes(16).toString('hex')}`,
    // E-mail channels' passwords (the email-ingest scenario creates one).
    CHANNEL_SECRET_KEY: randomBytes(32).toString('base64'),
  }
  const redisPrefix = `bench:${dbName}:${stamp}:${process.pid}:`
  const apiPort = await freePort()
  // Attachments go to a directory of this run (local driver), on the machine's temp file system.
  const storageDir = mkdtempSync(join(tmpdir(), 'parley-bench-files-'))
  onCleanup('remove stored files', () => rmSync(storageDir, { recursive: true, force: true }))
  const profDir = join(RESULTS, `cpu-${stamp}`)
  const nodeOptions = process.env.NODE_OPTIONS ?? imageNodeOptions()
  // The image's V8 options (Dockerfile), unless the bench's own NODE_OPTIONS experiment with others,
  // and V8's old-generation growth (src/heap.ts) when set for an experiment; unset: the API's
  // default. The ceiling servers get the same (BenchRun.runtimeEnv).
  const runtimeEnv: NodeJS.ProcessEnv = {
    ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}),
    ...(process.env.HEAP_GROWING_PERCENT ? { HEAP_GROWING_PERCENT: process.env.HEAP_GROWING_PERCENT } : {}),
  }
  const apiEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    PORT: String(apiPort),
    HOST: '127.0.0.1',
    DATABASE_URL: opts.apiDbParams ? `${dbUrl}?${opts.apiDbParams}` : dbUrl,
    REDIS_URL: opts.redisUrl,
    REDIS_PREFIX: redisPrefix,
    MIGRATE_ON_START: 'false',
    LOG_LEVEL: 'warn',
    // Pool experiments: the bench's own environment may set the API's pool sizes.
    ...(process.env.DATABASE_POOL_MAX ? { DATABASE_POOL_MAX: process.env.DATABASE_POOL_MAX } : {}),
    ...(process.env.DATABASE_ROUTING_POOL_MAX ? { DATABASE_ROUTING_POOL_MAX: process.env.DATABASE_ROUTING_POOL_MAX } : {}),
    ...(process.env.DATABASE_SEARCH_POOL_MAX ? { DATABASE_SEARCH_POOL_MAX: process.env.DATABASE_SEARCH_POOL_MAX } : {}),
    // glibc's arena count, for memory experiments (docs/deployment.md, "Memory": measured, not set).
    ...(process.env.MALLOC_ARENA_MAX ? { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX } : {}),
    // The idle release (src/heap.ts), for memory experiments; unset: the API's default.
    ...(process.env.HEAP_RELEASE_IDLE_MS ? { HEAP_RELEASE_IDLE_MS: process.env.HEAP_RELEASE_IDLE_MS } : {}),
    ...runtimeEnv,
    STORAGE_DIR: storageDir,
    // The load comes from one client address: the per-address widget limit would answer 429.
    SUPPORT_RATE_LIMIT_PER_MIN: '1000000000',
    // The routing scenario's visitors all come from this one address too.
    VISITOR_CONVERSATIONS_PER_ADDRESS_PER_HOUR: '1000000000',
    ...secrets,
    ...opts.env,
  }
  step(`starting the API (node dist/src/server.js${nodeOptions ? `, NODE_OPTIONS=${nodeOptions}` : ''}) on :${apiPort}${opts.cpuProf ? `, profiling into ${profDir}` : ''}`)
  const api = await startChild({
    name: 'API',
    args: [...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []), join(ROOT, 'dist/src/server.js')],
    env: apiEnv,
    port: apiPort,
    readyPath: '/health',
  })
  onCleanup('stop API', () => api.stop())
  onCleanup('delete Redis keys', async () => {
    const redis = new Redis(opts.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 })
    await redis.connect()
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000)
      if (keys.length) await redis.del(...keys)
      cursor = next
    } while (cursor !== '0')
    redis.disconnect()
  })
  const headersFor = async (ws: SeedWorkspace) => ({
    authorization: `Bearer ${await memberToken(ws.owner.userId, { secret: secrets.AUTH_JWT_SECRET, name: 'Bench Owner', expiresIn: '6h' })}`,
    'x-workspace-id': ws.id,
  })
  const load: LoadOptions = { connections: opts.connections, duration: opts.duration, warmup: opts.warmup }
  return {
    api,
    sql,
    dbUrl,
    seed: meta.seed,
    load,
    runTag: `${stamp}_${process.pid}`,
    secrets,
    storageDir,
    redis: { url: opts.redisUrl, prefix: redisPrefix },
    headers: { largest: await headersFor(meta.seed.largest), small: await headersFor(meta.seed.small) },
    runtimeEnv,
  }
}

