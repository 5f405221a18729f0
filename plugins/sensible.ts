import sensible from '@fastify/sensible'
import fp from 'fastify-plugin'

/**
 * @fastify/sensible for its reply helpers that set caching headers: `reply.vary(field)` appends
 * to a Vary another hook already set (CORS sets Vary: Origin) and `reply.cacheControl(...)`
 * refuses a misspelt directive. Its HTTP errors (`app.httpErrors`, `reply.notFound()`, ...) and
 * `app.assert` are not used: errors come from src/errors.ts only (scripts/check-layers.ts).
 */
export default fp(
  async (app) => {
    await app.register(sensible)
  },
  { name: 'sensible' },
)
