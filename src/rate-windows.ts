import type { Config } from './config.js'
import type { RedisClient } from './redis.js'
import type { Log } from './logger.js'

/**
 * "Count this key in this window": the port every time-window limit uses (plugins/rate-limit.ts
 * adapts it to @fastify/rate-limit's store). Fixed windows: the first hit of a key starts its
 * window, which ends `windowMs` later whatever happens inside it.
 *
 * Implementations: Redis (shared by every replica), in-process memory (one process), and the
 * fallback wrapper that counts in memory while Redis fails, so a Redis outage never switches a
 * limit off: every replica then enforces the same numbers on its own.
 */
export interface WindowCount {
  /** Hits of the key in its current window, this one included for incr. */
  current: number
  /** Milliseconds until the window ends (0: no window is open). */
  ttl: number
}

export interface RateWindows {
  /** Counts one hit of `key` and answers the window's count. */
  incr(key: string, windowMs: number): Promise<WindowCount>
  /** The window's count without counting (0 when no window is open). */
  read(key: string): Promise<WindowCount>
}

const INCR_SCRIPT = `
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { current, ttl }`

declare module 'ioredis' {
  interface RedisCommander<Context> {
    parleyRateLimit(key: string, windowMs: number): import('ioredis').Result<[number, number], Context>
  }
}

/** One Redis counter per `<prefix><key>`, expiring with its window (one round trip per hit). */
export function redisWindows(redis: RedisClient, prefix: string): RateWindows {
  if (!redis.parleyRateLimit) redis.defineCommand('parleyRateLimit', { numberOfKeys: 1, lua: INCR_SCRIPT })
  return {
    async incr(key, windowMs) {
      const [current, ttl] = await redis.parleyRateLimit(`${prefix}${key}`, windowMs)
      return { current, ttl }
    },
    async read(key) {
      const [[e1, value], [e2, ttl]] = (await redis.multi().get(`${prefix}${key}`).pttl(`${prefix}${key}`).exec()) ?? [[null, null], [null, -2]]
      if (e1 || e2) throw e1 ?? e2
      return { current: Number(value ?? 0), ttl: Math.max(0, Number(ttl)) }
    },
  }
}

/**
 * In-process windows: for a single process (embedded mode) and as the fallback while Redis is
 * down. Bounded: past `maxKeys` expired windows are swept, then the oldest dropped, so a flood of
 * distinct keys costs memory proportional to maxKeys, not to the flood.
 */
export function memoryWindows(maxKeys = 100_000, now: () => number = Date.now): RateWindows {
  const windows = new Map<string, { count: number; endsAt: number }>()
  const sweep = () => {
    const t = now()
    for (const [k, w] of windows) if (w.endsAt <= t) windows.delete(k)
    // Still full: the oldest windows go first (a Map iterates in insertion order).
    for (const k of windows.keys()) {
      if (windows.size < maxKeys) break
      windows.delete(k)
    }
  }
  const live = (key: string) => {
    const w = windows.get(key)
    if (w && w.endsAt <= now()) {
      windows.delete(key)
      return undefined
    }
    return w
  }
  return {
    async incr(key, windowMs) {
      let w = live(key)
      if (!w) {
        if (windows.size >= maxKeys) sweep()
        w = { count: 0, endsAt: now() + windowMs }
        windows.set(key, w)
      }
      w.count++
      return { current: w.count, ttl: w.endsAt - now() }
    },
    async read(key) {
      const w = live(key)
      return w ? { current: w.count, ttl: w.endsAt - now() } : { current: 0, ttl: 0 }
    },
  }
}

/**
 * Redis first; when a Redis command fails (down, unreachable, timing out) the same key is counted
 * in this process instead, with the same numbers. Counts are not merged back: after an outage
 * each side's window simply runs out.
 */
export function withFallback(primary: RateWindows, fallback: RateWindows, log: Log): RateWindows {
  let failing = false
  const note = (err: unknown) => {
    if (!failing) log.warn({ err: { message: (err as Error).message } }, 'rate limits: Redis unavailable, counting in this process')
    failing = true
  }
  const recovered = () => {
    if (failing) log.info('rate limits: Redis available again')
    failing = false
  }
  return {
    async incr(key, windowMs) {
      try {
        const r = await primary.incr(key, windowMs)
        recovered()
        return r
      } catch (err) {
        note(err)
        return fallback.incr(key, windowMs)
      }
    },
    async read(key) {
      try {
        const r = await primary.read(key)
        recovered()
        return r
      } catch (err) {
        note(err)
        return fallback.read(key)
      }
    },
  }
}

/**
 * The one place the process chooses its windows: Redis with the in-process fallback when there is
 * a Redis client, the in-process windows alone when there is none (a single-process deployment).
 */
export function createRateWindows(config: Config, redis: RedisClient | null, log: Log): RateWindows {
  if (!redis) return memoryWindows()
  return withFallback(redisWindows(redis, `${config.REDIS_PREFIX}rl:`), memoryWindows(), log)
}
