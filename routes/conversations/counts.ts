import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { ReconcileResult, UnreadCount } from '../../schemas/conversation-ops.js'
import { readUnreadCount, reconcileCounters } from '../../src/conversations/counters.js'

/** Unread counters: read from counter rows; reconcile recounts and repairs (src/conversations/counters.ts). */
const tags = ['conversations']

/**
 * Reconcile holds the workspace's counter lock exclusively while it recounts, so writers of that
 * workspace wait for it: limit it per workspace. Counted after authentication (preHandler, after
 * the auth guard), so strangers cannot use up a workspace's allowance.
 */
export const RECONCILE_PER_MINUTE = 30

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
      config: {
        access: { member: 'conversations:read' },
        rateLimit: {
          hook: 'preHandler',
          max: RECONCILE_PER_MINUTE,
          timeWindow: 60_000,
          keyGenerator: (request) => `reconcile:${request.ctx.caller.kind === 'member' ? request.ctx.caller.workspaceId : request.ip}`,
        },
      },
      schema: { tags, summary: 'Recount unread counters and repair drift', response: { 200: ReconcileResult, ...errorResponses(401, 403, 429, 500) } },
    },
    async (request) => reconcileCounters(request.ctx),
  )
}
export default routes
