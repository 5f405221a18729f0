import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { VisitorBootstrapBody, VisitorSession } from '../../schemas/auth.js'
import { errorResponses } from '../../schemas/common.js'
import { limits } from '../../plugins/rate-limit.js'
import { bootstrapVisitor } from '../../src/auth/bootstrap.js'

const header = (request: FastifyRequest, name: string) => {
  const v = request.headers[name]
  return typeof v === 'string' && v !== '' ? v : undefined
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      config: { access: 'public', rateLimit: limits.visitorBootstrap(app.config) },
      schema: {
        tags: ['auth'],
        summary: 'Visitor bootstrap: a new or resumed guest and its visitor session',
        body: VisitorBootstrapBody,
        response: { 200: VisitorSession, 201: VisitorSession, ...errorResponses(400, 401, 403, 404, 415, 429) },
      },
    },
    async (request, reply) => {
      const result = await bootstrapVisitor(request.ctx, request.body, {
        origin: header(request, 'origin'),
        channelToken: header(request, 'x-channel-token'),
        visitorSession: header(request, 'x-visitor-session'),
      })
      return reply.code(result.created ? 201 : 200).send(result.body)
    },
  )
}
export default routes
