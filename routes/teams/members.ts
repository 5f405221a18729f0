import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, NoBody } from '../../schemas/common.js'
import { PutTeamMemberBody, Team, TeamMemberParams } from '../../schemas/teams.js'
import { putTeamMember, removeTeamMember } from '../../src/teams/teams.js'

/** /teams/:id/members/:userId (API.md section 16). */
const tags = ['teams']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.put(
    '/:id/members/:userId',
    {
      config: { access: { member: 'teams:manage' } },
      schema: {
        tags,
        summary: 'Add a member to the team, or change their capacity',
        params: TeamMemberParams,
        body: PutTeamMemberBody,
        response: { 200: Team, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => putTeamMember(request.ctx, request.params.id, request.params.userId, request.body ?? {}),
  )

  app.delete(
    '/:id/members/:userId',
    {
      config: { access: { member: 'teams:manage' } },
      schema: {
        tags,
        summary: "Remove a member from the team (their open conversations of it go back to its queue)",
        params: TeamMemberParams,
        body: NoBody,
        response: { 200: Team, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => removeTeamMember(request.ctx, request.params.id, request.params.userId),
  )
}
export default routes
