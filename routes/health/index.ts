import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Health } from '../../schemas/health.js'
import { checkHealth, redisOf } from '../../src/health.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: 'public' },
      schema: { tags: ['health'], summary: 'Liveness and readiness probe', response: { 200: Health, 503: Health } },
    },
    async (request, reply) => {
      const health = await checkHealth({ ...request.ctx, redis: redisOf(request.ctx.shared) })
      return reply.code(health.status === 'ok' ? 200 : 503).send(health)
    },
  )
}
export default routes
