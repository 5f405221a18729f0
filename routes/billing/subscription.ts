import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Subscription } from '../../schemas/billing.js'
import { errorResponses } from '../../schemas/common.js'
import { getSubscription } from '../../src/billing/queries.js'

/** /billing/subscription */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/subscription',
    {
      config: { access: { member: 'billing:read' } },
      schema: { tags: ['billing'], summary: "The workspace's subscription", response: { 200: Subscription, ...errorResponses(400, 401, 403) } },
    },
    async (request) => getSubscription(request.ctx),
  )
}
export default routes
