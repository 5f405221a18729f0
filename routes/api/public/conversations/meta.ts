import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../../../plugins/rate-limit.js'
import { errorResponses, IdParams } from '../../../../schemas/common.js'
import { PublicMeta } from '../../../../schemas/conversations.js'
import { publicMeta } from '../../../../src/conversations/public.js'

/** /api/public/conversations/:id/meta: anonymous, any origin, in the public routes' shared rate-limit budget. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/meta',
    {
      config: { access: 'public', rateLimit: limits.publicStatus(app.config) },
      schema: { tags: ['public'], summary: 'Status, assignment and times of a conversation', params: IdParams, response: { 200: PublicMeta, ...errorResponses(404, 429) } },
    },
    async (request) => publicMeta(request.ctx, request.params.id),
  )
}
export default routes
