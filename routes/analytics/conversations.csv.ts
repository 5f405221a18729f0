import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { RangeQuery } from '../../schemas/analytics.js'
import { errorResponses } from '../../schemas/common.js'
import { conversationsCsv } from '../../src/analytics/export.js'

/** GET /analytics/conversations.csv: one row per conversation created in the range, streamed. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/conversations.csv',
    {
      config: { access: { member: 'analytics:read' } },
      schema: {
        tags: ['analytics'],
        summary: 'Conversations created in the range as CSV (RFC 4180), streamed',
        querystring: RangeQuery,
        response: {
          200: Type.String({ description: 'text/csv; charset=utf-8, header line first' }),
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request, reply) => {
      const stream = await conversationsCsv(request.ctx, request.query)
      stream.on('error', (err) => request.log.error({ err }, 'csv export stream failed'))
      reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="conversations.csv"')
        .cacheControl('private').cacheControl('no-store')
      // A stream bypasses the serializer; the 200 schema documents the file for OpenAPI.
      return reply.send(stream as unknown as string)
    },
  )
}
export default routes
