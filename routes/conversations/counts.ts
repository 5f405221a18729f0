import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../plugins/rate-limit.js'
import { errorResponses } from '../../schemas/common.js'
import { ReconcileResult, UnreadCount } from '../../schemas/conversation-ops.js'
import { readUnreadCount, reconcileCounters } from '../../src/conversations/counters.js'

/** Unread counters: read from counter rows; reconcile recounts and repairs (src/conversations/counters.ts). */
const tags = ['conversations']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/unread-count',
    {
      config: { access: { member: 'conversations:read' } },
      schema: { tags, summary: 'Unread OPEN conversations and messages', response: { 200: UnreadCount, ...errorResponses(401, 403, 500) } },
    },
    async (request) => readUnreadCount(request.ctx),
  )

  app.get(
    '/counts/reconcile',
    {
      config: { access: { member: 'conversations:read' }, rateLimit: limits.reconcile() },
      schema: { tags, summary: 'Recount unread counters and repair drift', response: { 200: ReconcileResult, ...errorResponses(401, 403, 429, 500) } },
    },
    async (request) => reconcileCounters(request.ctx),
  )
}
export default routes
