import rateLimit from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import { AppError } from '../src/errors.js'

/**
 * Rate limits are opt-in per route (`config.rateLimit`), counted in Redis so every replica
 * shares them. When Redis is down the limit is skipped rather than failing the request.
 */
export default fp(
  async (app) => {
    await app.register(rateLimit, {
      global: false,
      redis: app.deps.redis,
      nameSpace: `${app.config.REDIS_PREFIX}rl:`,
      skipOnError: true,
      errorResponseBuilder: (_req, ctx) =>
        new AppError(429, 'RATE_LIMITED', `Too many requests, retry in ${Math.ceil(ctx.ttl / 1000)} s`, {
          'retry-after': String(Math.ceil(ctx.ttl / 1000)),
        }),
    })
  },
  { name: 'rate-limit', dependencies: ['deps'] },
)
