import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { HistoryList } from '../../schemas/conversations.js'
import { assignmentHistory } from '../../src/conversations/lifecycle.js'

/** /conversations/:id/assignment-history */
const tags = ['conversations']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/assignment-history',
    {
      config: { access: { member: 'conversations:read' } },
      schema: { tags, summary: 'Assignment history, newest first', params: IdParams, response: { 200: HistoryList, ...errorResponses(401, 403, 404, 500) } },
    },
    async (request) => ({ data: await assignmentHistory(request.ctx, request.params.id) }),
  )
}
export default routes
