import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { TimeseriesQuery, Timeseries } from '../../schemas/analytics.js'
import { timeseries } from '../../src/analytics/reports.js'

/** GET /analytics/timeseries (API.md section 15). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/timeseries',
    {
      config: { access: { member: 'analytics:read' } },
      schema: {
        tags: ['analytics'],
        summary: 'One metric per calendar bucket (hour, day, week) in the time zone',
        querystring: TimeseriesQuery,
        response: { 200: Timeseries, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => timeseries(request.ctx, request.query),
  )
}
export default routes
