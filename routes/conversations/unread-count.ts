import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { UnreadCount } from '../../schemas/conversations.js'
import { readUnreadCount } from '../../src/conversations/counters.js'

/** /conversations/unread-count: read from the counter rows (src/conversations/counters.ts). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/unread-count',
    {
      config: { access: { member: 'conversations:read' } },
      schema: { tags: ['conversations'], summary: 'Unread OPEN conversations and messages', response: { 200: UnreadCount, ...errorResponses(401, 403, 500) } },
    },
    async (request) => readUnreadCount(request.ctx),
  )
}
export default routes
