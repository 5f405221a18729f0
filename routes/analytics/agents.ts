import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { RangeQuery, AgentsReport } from '../../schemas/analytics.js'
import { agentsReport } from '../../src/analytics/reports.js'

/** GET /analytics/agents (API.md section 15). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/agents',
    {
      config: { access: { member: 'analytics:read' } },
      schema: {
        tags: ['analytics'],
        summary: 'Metrics per member with anything attributed in the range',
        querystring: RangeQuery,
        response: { 200: AgentsReport, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => agentsReport(request.ctx, request.query),
  )
}
export default routes
