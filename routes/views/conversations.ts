import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { ConversationPage } from '../../schemas/conversations.js'
import { ViewConversationsQuery } from '../../schemas/triage.js'
import { viewConversations } from '../../src/triage/views.js'

/** /views/:id/conversations (API.md section 17) */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/conversations',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags: ['views'],
        summary: "The view's conversations (its list parameters, read now)",
        params: IdParams,
        querystring: ViewConversationsQuery,
        response: { 200: ConversationPage, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => viewConversations(request.ctx, request.params.id, request.query),
  )
}
export default routes
