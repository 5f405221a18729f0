import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { ClosedListQuery, ConversationPage } from '../../schemas/conversations.js'
import { listConversations } from '../../src/conversations/lists.js'

/** /conversations/closed: a fixed word, matched before `/:id` by the router. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/closed',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags: ['conversations'],
        summary: 'Resolved (and legacy CLOSED) conversations, newest closedAt first by default',
        querystring: ClosedListQuery,
        response: { 200: ConversationPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => listConversations(request.ctx, 'closed', request.query),
  )
}
export default routes
