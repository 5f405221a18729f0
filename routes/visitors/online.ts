import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { OnlineVisitors } from '../../schemas/visitors.js'
import { onlineVisitors } from '../../src/visitors/visitors.js'

/** /visitors/online */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/online',
    {
      config: { access: { member: 'visitors:read' } },
      schema: {
        tags: ['visitors'],
        summary: 'Visitors with a live gateway connection now, most recently connected first (at most 500)',
        response: { 200: OnlineVisitors, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => onlineVisitors(request.ctx),
  )
}
export default routes
