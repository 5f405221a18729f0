import type { Redis } from 'ioredis'
import type { Sql } from './db/client.js'

export type DependencyState = 'online' | 'offline'

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

export async function checkHealth(sql: Sql, redis: Redis, timeoutMs: number) {
  const [database, redisState] = await Promise.all([
    probe(() => sql`SELECT 1`.execute(), timeoutMs),
    probe(() => redis.ping(), timeoutMs),
  ])
  const ok = database === 'online' && redisState === 'online'
  return {
    status: ok ? ('ok' as const) : ('error' as const),
    redis: redisState,
    database,
    timestamp: new Date().toISOString(),
  }
}
