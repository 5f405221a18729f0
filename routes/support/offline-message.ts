import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../plugins/rate-limit.js'
import { errorResponses } from '../../schemas/common.js'
import { Conversation } from '../../schemas/conversations.js'
import { OfflineMessageBody } from '../../schemas/support.js'
import { sendOfflineMessage } from '../../src/support/offline.js'

/** /support/offline-message: a visitor leaves a message for the team. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/offline-message',
    {
      // The same budgets as POST /conversations: an offline message starts a conversation.
      config: { access: { visitor: true }, rateLimit: limits.visitorConversations(app.config) },
      schema: {
        tags: ['support'],
        summary: 'Start a conversation with a message; when nobody is online, e-mail the owners and admins',
        body: OfflineMessageBody,
        response: { 201: Conversation, ...errorResponses(400, 401, 403, 404, 409, 415, 429) },
      },
    },
    async (request, reply) => reply.code(201).send((await sendOfflineMessage(request.ctx, request.body)).conversation),
  )
}
export default routes
