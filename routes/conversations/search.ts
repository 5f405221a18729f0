import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { SearchPage, SearchQuery } from '../../schemas/search.js'
import { searchConversations } from '../../src/search/search.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/search',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags: ['conversations'],
        summary: 'Full-text search over message bodies and guest name / e-mail, best matches first',
        querystring: SearchQuery,
        response: { 200: SearchPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => searchConversations(request.ctx, request.query),
  )
}
export default routes
