import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { ConversationPage, HistoryParams, HistoryQuery } from '../../schemas/conversations.js'
import { guestHistory } from '../../src/conversations/lists.js'

/** /conversations/guest/:guestId/history */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/guest/:guestId/history',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: {
        tags: ['conversations'],
        summary: "A guest's conversations, newest first (members, or that guest's visitor)",
        params: HistoryParams,
        querystring: HistoryQuery,
        response: { 200: ConversationPage, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => guestHistory(request.ctx, request.params.guestId, request.query),
  )
}
export default routes
