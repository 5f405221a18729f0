import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { RangeQuery, Summary } from '../../schemas/analytics.js'
import { summary } from '../../src/analytics/reports.js'

/** GET /analytics/summary (API.md section 15). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/summary',
    {
      config: { access: { member: 'analytics:read' } },
      schema: {
        tags: ['analytics'],
        summary: 'Metrics of the range and of the period of the same length before it',
        querystring: RangeQuery,
        response: { 200: Summary, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => summary(request.ctx, request.query),
  )
}
export default routes
