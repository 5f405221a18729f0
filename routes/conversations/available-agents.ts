import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { AvailableAgents } from '../../schemas/conversations.js'
import { availableAgents } from '../../src/conversations/agents.js'

/** /conversations/available-agents */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/available-agents',
    {
      config: { access: { member: 'conversations:assign' } },
      schema: {
        tags: ['conversations'],
        summary: 'Active members with presence, online first, then fewest open assigned',
        response: { 200: AvailableAgents, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => ({ data: await availableAgents(request.ctx) }),
  )
}
export default routes
