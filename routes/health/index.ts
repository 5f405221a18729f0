import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { checkHealth } from '../../src/health.js'

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
  redis: Type.Union([Type.Literal('online'), Type.Literal('offline')]),
  database: Type.Union([Type.Literal('online'), Type.Literal('offline')]),
  timestamp: Type.String({ format: 'date-time' }),
})

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: 'public' },
      schema: { tags: ['health'], summary: 'Liveness and readiness probe', response: { 200: Health, 503: Health } },
    },
    async (request, reply) => {
      const health = await checkHealth(request.ctx)
      return reply.code(health.status === 'ok' ? 200 : 503).send(health)
    },
  )
}
export default routes
