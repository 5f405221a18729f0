import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../../../plugins/rate-limit.js'
import { errorResponses, IdParams } from '../../../../schemas/common.js'
import { PublicAgent } from '../../../../schemas/conversations.js'
import { publicAgent } from '../../../../src/conversations/public.js'

/** /api/public/conversations/:id/agent: anonymous, any origin, in the public routes' shared rate-limit budget. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/agent',
    {
      config: { access: 'public', rateLimit: limits.publicStatus(app.config) },
      schema: { tags: ['public'], summary: "The assigned agent's display name and avatar", params: IdParams, response: { 200: PublicAgent, ...errorResponses(404, 429) } },
    },
    async (request) => publicAgent(request.ctx, request.params.id),
  )
}
export default routes
