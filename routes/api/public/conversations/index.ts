import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../../../plugins/rate-limit.js'
import { errorResponses, IdParams } from '../../../../schemas/common.js'
import { PublicAgent, PublicMeta, PublicStatus } from '../../../../schemas/conversation-lists.js'
import { publicAgent, publicMeta, publicStatus } from '../../../../src/conversations/public.js'

/**
 * Anonymous conversation status for widgets and status pages. No authentication, any origin
 * (access 'public'); one rate-limit budget per client address shared by the three routes.
 */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  const common = { config: { access: 'public' as const, rateLimit: limits.publicStatus(app.config) } }
  const errors = errorResponses(404, 429)

  app.get(
    '/:id/status',
    {
      ...common,
      schema: { tags: ['public'], summary: 'Whether a conversation exists, is deleted, and its status', params: IdParams, response: { 200: PublicStatus, ...errors } },
    },
    async (request) => publicStatus(request.ctx, request.params.id),
  )

  app.get(
    '/:id/agent',
    {
      ...common,
      schema: { tags: ['public'], summary: "The assigned agent's display name and avatar", params: IdParams, response: { 200: PublicAgent, ...errors } },
    },
    async (request) => publicAgent(request.ctx, request.params.id),
  )

  app.get(
    '/:id/meta',
    {
      ...common,
      schema: { tags: ['public'], summary: 'Status, assignment and times of a conversation', params: IdParams, response: { 200: PublicMeta, ...errors } },
    },
    async (request) => publicMeta(request.ctx, request.params.id),
  )
}
export default routes
