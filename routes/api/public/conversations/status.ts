import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../../../plugins/rate-limit.js'
import { errorResponses, IdParams } from '../../../../schemas/common.js'
import { PublicStatus } from '../../../../schemas/conversations.js'
import { publicStatus } from '../../../../src/conversations/public.js'

/** /api/public/conversations/:id/status: anonymous, any origin, in the public routes' shared rate-limit budget. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/status',
    {
      config: { access: 'public', rateLimit: limits.publicStatus(app.config) },
      schema: { tags: ['public'], summary: 'Whether a conversation exists, is deleted, and its status', params: IdParams, response: { 200: PublicStatus, ...errorResponses(404, 429) } },
    },
    async (request) => publicStatus(request.ctx, request.params.id),
  )
}
export default routes
