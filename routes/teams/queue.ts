import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { TeamQueue } from '../../schemas/teams.js'
import { getTeamQueue } from '../../src/teams/teams.js'

/** /teams/:id/queue (API.md section 16). */
const tags = ['teams']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/queue',
    {
      config: { access: { member: 'members:read' } },
      schema: { tags, summary: "The team's queue, oldest first (at most 500)", params: IdParams, response: { 200: TeamQueue, ...errorResponses(401, 403, 404) } },
    },
    async (request) => getTeamQueue(request.ctx, request.params.id),
  )
}
export default routes
