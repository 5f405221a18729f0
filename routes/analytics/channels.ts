import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { RangeQuery, ChannelsReport } from '../../schemas/analytics.js'
import { channelsReport } from '../../src/analytics/reports.js'

/** GET /analytics/channels (API.md section 15). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/channels',
    {
      config: { access: { member: 'analytics:read' } },
      schema: {
        tags: ['analytics'],
        summary: 'Metrics per channel',
        querystring: RangeQuery,
        response: { 200: ChannelsReport, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => channelsReport(request.ctx, request.query),
  )
}
export default routes
