import type { HealthView } from '../schemas/health.js'
import type { Deps } from './context.js'

type DependencyState = HealthView['database']

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

/** GET /health, in the API and the gateway (which shares these three pieces of Deps). */
export async function checkHealth({ sql, redis, config }: Pick<Deps, 'sql' | 'redis' | 'config'>): Promise<HealthView> {
  const timeoutMs = config.HEALTH_TIMEOUT_MS
  const [database, redisState] = await Promise.all([
    probe(() => sql`SELECT 1`.execute(), timeoutMs),
    probe(() => redis.ping(), timeoutMs),
  ])
  const ok = database === 'online' && redisState === 'online'
  return {
    status: ok ? 'ok' : 'error',
    redis: redisState,
    database,
    timestamp: new Date().toISOString(),
  }
}
