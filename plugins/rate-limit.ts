import rateLimit, { type FastifyRateLimitStore, type RateLimitOptions } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../src/config.js'
import { rateLimited } from '../src/errors.js'
import { isUuid } from '../src/uuid.js'

/**
 * Time-window rate limits: the one way to declare one is the route's own configuration, next to
 * its access, naming a limit of `limits` below:
 *
 *   config: { access: 'public', rateLimit: limits.publicStatus(app.config) }
 *
 * Counted in Redis so every replica shares them; when Redis is down the limit is skipped rather
 * than failing the request. Routes with the same `groupId` share one counter per key (the
 * library's own stores keep one per route). A count about data rather than time (transcript
 * mails per conversation) is a quota checked in the transaction, not a rate limit
 * (docs/architecture.md).
 */
export const limits = {
  /**
   * POST /auth: AUTH_RATE_LIMIT_PER_MIN per client address and channel. preValidation: the body
   * is parsed (channelId is known) and malformed attempts count too.
   */
  visitorBootstrap: (config: Config): RateLimitOptions => ({
    max: config.AUTH_RATE_LIMIT_PER_MIN,
    timeWindow: 60_000,
    hook: 'preValidation',
    keyGenerator: (request) => {
      const channelId = (request.body as { channelId?: unknown } | undefined)?.channelId
      return `${request.ip}:${isUuid(channelId) ? channelId.toLowerCase() : '-'}`
    },
  }),
  /** The anonymous /api/public/conversations routes: one budget per client address for all of them. */
  publicStatus: (config: Config): RateLimitOptions => ({
    max: config.PUBLIC_RATE_LIMIT_PER_MIN,
    timeWindow: 60_000,
    hook: 'onRequest',
    groupId: 'public',
    keyGenerator: (request) => request.ip,
  }),
  /**
   * GET /support/* (the widget's configuration, asked on every page load of customers' sites):
   * SUPPORT_RATE_LIMIT_PER_MIN per client address, its own budget (not /api/public's).
   */
  support: (config: Config): RateLimitOptions => ({
    max: config.SUPPORT_RATE_LIMIT_PER_MIN,
    timeWindow: 60_000,
    hook: 'onRequest',
    groupId: 'support',
    keyGenerator: (request) => request.ip,
  }),
  /**
   * counts/reconcile holds the workspace's counter lock exclusively while it recounts, so writers
   * of that workspace wait for it: RECONCILE_PER_MINUTE per workspace. Counted after
   * authentication (preHandler, after the access check), so strangers cannot use up a
   * workspace's allowance.
   */
  reconcile: (): RateLimitOptions => ({
    max: RECONCILE_PER_MINUTE,
    timeWindow: 60_000,
    hook: 'preHandler',
    keyGenerator: (request) => workspaceKey(request),
  }),
}

export const RECONCILE_PER_MINUTE = 30

const workspaceKey = (request: FastifyRequest) => {
  const caller = request.ctx?.caller
  return caller?.kind === 'member' || caller?.kind === 'visitor' ? caller.workspaceId : request.ip
}

const SCRIPT = `
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

/** One counter per `<prefix><route or groupId>:<key>`, expiring with its window. */
function redisStore(redis: Redis, prefix: string) {
  if (!redis.parleyRateLimit) redis.defineCommand('parleyRateLimit', { numberOfKeys: 1, lua: SCRIPT })
  class RedisWindowStore implements FastifyRateLimitStore {
    constructor(
      _options: unknown,
      private readonly bucket = '',
    ) {}

    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number) {
      redis.parleyRateLimit(`${prefix}${this.bucket}:${key}`, timeWindow).then(
        ([current, ttl]) => callback(null, { current, ttl }),
        (err: Error) => callback(err),
      )
    }

    /**
     * The store of one route. The library passes the route's merged limit options with the route
     * itself under `routeInfo` (its typings say the route options).
     */
    child(options: object) {
      const { groupId, routeInfo } = options as { groupId?: string; routeInfo?: { method?: string | string[]; url?: string } }
      return new RedisWindowStore(undefined, groupId ?? `${[routeInfo?.method].flat().join(',')}${routeInfo?.url}`)
    }
  }
  return RedisWindowStore
}

export default fp(
  async (app) => {
    await app.register(rateLimit, {
      global: false,
      store: redisStore(app.deps.redis, `${app.config.REDIS_PREFIX}rl:`),
      skipOnError: true,
      errorResponseBuilder: (_req, limit) => rateLimited(Math.ceil(limit.ttl / 1000)),
    })
  },
  { name: 'rate-limit', dependencies: ['deps'] },
)
