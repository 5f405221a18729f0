import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { LiveQuery, Live } from '../../schemas/analytics.js'
import { live } from '../../src/analytics/reports.js'

/** GET /analytics/live (API.md section 15). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/live',
    {
      config: { access: { member: 'analytics:read' } },
      schema: {
        tags: ['analytics'],
        summary: 'Open, unassigned, unattended and waiting conversations and who is online, now',
        querystring: LiveQuery,
        response: { 200: Live, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => live(request.ctx, request.query),
  )
}
export default routes
