import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../plugins/rate-limit.js'
import { errorResponses } from '../../schemas/common.js'
import { Csat, CsatBody } from '../../schemas/support.js'
import { rateConversation } from '../../src/support/csat.js'

/** /support/csat: the visitor rates a resolved conversation. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/csat',
    {
      config: { access: { visitor: true }, rateLimit: limits.csat(app.config) },
      schema: {
        tags: ['support'],
        summary: 'Rate a resolved conversation (1..5); a second rating within 14 days replaces the first',
        body: CsatBody,
        response: { 200: Csat, 201: Csat, ...errorResponses(400, 401, 403, 404, 409, 415, 429) },
      },
    },
    async (request, reply) => {
      const { rating, created } = await rateConversation(request.ctx, request.body)
      return reply.code(created ? 201 : 200).send(rating)
    },
  )
}
export default routes
