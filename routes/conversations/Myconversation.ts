import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { ConversationPage, MineListQuery } from '../../schemas/conversations.js'
import { listConversations } from '../../src/conversations/lists.js'

/** /conversations/Myconversation: a fixed word, matched before `/:id` by the router. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/Myconversation',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags: ['conversations'],
        summary: "The caller's assigned conversations (any status), pinned first",
        querystring: MineListQuery,
        response: { 200: ConversationPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => listConversations(request.ctx, 'mine', request.query),
  )
}
export default routes
