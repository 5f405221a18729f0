import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { Csat } from '../../schemas/support.js'
import { getRating } from '../../src/support/csat.js'

/** /conversations/:id/csat */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/csat',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: {
        tags: ['conversations'],
        summary: "The conversation's satisfaction rating",
        params: IdParams,
        response: { 200: Csat, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => getRating(request.ctx, request.params.id),
  )
}
export default routes
