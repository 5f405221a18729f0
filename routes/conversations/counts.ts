import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../plugins/rate-limit.js'
import { errorResponses } from '../../schemas/common.js'
import { ReconcileResult } from '../../schemas/conversations.js'
import { reconcileCounters } from '../../src/conversations/counters.js'

/** /conversations/counts/reconcile: recounts the unread counters and repairs drift (src/conversations/counters.ts). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/counts/reconcile',
    {
      config: { access: { member: 'conversations:reconcile' }, rateLimit: limits.reconcile(app.config) },
      schema: { tags: ['conversations'], summary: 'Recount unread counters and repair drift', response: { 200: ReconcileResult, ...errorResponses(401, 403, 429, 500) } },
    },
    async (request) => reconcileCounters(request.ctx),
  )
}
export default routes
