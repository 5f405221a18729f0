import type { HealthView } from '../schemas/health.js'
import type { RedisClient } from './redis.js'
import type { Deps } from './context.js'
import type { SharedState } from './mode.js'

type DependencyState = HealthView['database']

/** The Redis /health pings: none in single-process mode. */
export const redisOf = (shared: SharedState): RedisClient | null => (shared.kind === 'redis' ? shared.redis : null)

/** Resolves to the probe's result, or rejects after `ms`: a hung dependency answers in time too. */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

export async function probe(check: () => Promise<unknown>, timeoutMs: number): Promise<DependencyState> {
  try {
    await withTimeout(check(), timeoutMs)
    return 'online'
  } catch {
    return 'offline'
  }
}

/**
 * GET /health, in the API and the gateway. `redis` is null in single-process mode: there is no
 * Redis to check, and the answer says `"redis": "in-process"` (events, presence and limits live
 * in this process, which is answering).
 */
export async function checkHealth({ sql, redis, config, reads }: { sql: Deps['sql']; redis: RedisClient | null; config: Deps['config']; reads?: Deps['reads'] }): Promise<HealthView> {
  const timeoutMs = config.HEALTH_TIMEOUT_MS
  const [database, redisState, replica] = await Promise.all([
    probe(() => sql`SELECT 1`.execute(), timeoutMs),
    redis ? probe(() => redis.ping(), timeoutMs) : ('in-process' as const),
    reads?.probe(timeoutMs) ?? null,
  ])
  const ok = database === 'online' && redisState !== 'offline'
  return {
    status: ok ? 'ok' : 'error',
    redis: redisState,
    database,
    ...(replica ? { replica } : {}),
    timestamp: new Date().toISOString(),
  }
}
