import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../plugins/rate-limit.js'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { Message, MessagePage, MessagesQuery, PostMessageBody } from '../../schemas/conversations.js'
import { listMessages, postMessage } from '../../src/conversations/messages.js'

/** /conversations/:id/messages */
const tags = ['conversations']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/messages',
    {
      config: { access: { member: 'conversations:write', visitor: true }, rateLimit: limits.visitorMessages(app.config) },
      schema: {
        tags,
        summary: 'Send a message (a retried clientMessageId returns the first one with 200)',
        params: IdParams,
        body: PostMessageBody,
        response: { 200: Message, 201: Message, ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500) },
      },
    },
    async (request, reply) => {
      const { message, created } = await postMessage(request.ctx, request.params.id, request.body)
      return reply.code(created ? 201 : 200).send(message)
    },
  )

  app.get(
    '/:id/messages',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: { tags, summary: 'Messages, oldest first', params: IdParams, querystring: MessagesQuery, response: { 200: MessagePage, ...errorResponses(400, 401, 403, 404, 500) } },
    },
    async (request) => listMessages(request.ctx, request.params.id, { limit: request.query.limit ?? 20, cursor: request.query.cursor }),
  )
}
export default routes
