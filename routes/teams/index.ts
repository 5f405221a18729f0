import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams, NoBody } from '../../schemas/common.js'
import { CreateTeamBody, Team, TeamList, UpdateTeamBody } from '../../schemas/teams.js'
import { createTeam, deleteTeam, getTeam, listTeams, updateTeam } from '../../src/teams/teams.js'

/** /teams and /teams/:id (API.md section 16). Rules live in src/teams/. */
const tags = ['teams']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: { member: 'members:read' } },
      schema: { tags, summary: "The workspace's teams, by name", response: { 200: TeamList, ...errorResponses(401, 403) } },
    },
    async (request) => listTeams(request.ctx),
  )

  app.post(
    '/',
    {
      config: { access: { member: 'teams:manage' } },
      schema: { tags, summary: 'Create a team', body: CreateTeamBody, response: { 201: Team, ...errorResponses(400, 401, 403, 409, 415) } },
    },
    async (request, reply) => reply.code(201).send(await createTeam(request.ctx, request.body)),
  )

  app.get(
    '/:id',
    {
      config: { access: { member: 'members:read' } },
      schema: { tags, summary: 'A team and its members', params: IdParams, response: { 200: Team, ...errorResponses(401, 403, 404) } },
    },
    async (request) => getTeam(request.ctx, request.params.id),
  )

  app.patch(
    '/:id',
    {
      config: { access: { member: 'teams:manage' } },
      schema: { tags, summary: 'Change a team', params: IdParams, body: UpdateTeamBody, response: { 200: Team, ...errorResponses(400, 401, 403, 404, 409, 415) } },
    },
    async (request) => updateTeam(request.ctx, request.params.id, request.body),
  )

  app.delete(
    '/:id',
    {
      config: { access: { member: 'teams:manage' } },
      schema: { tags, summary: 'Delete a team (its conversations keep their assignee, leave the team and its queue)', params: IdParams, body: NoBody, response: { 204: { type: 'null' }, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request, reply) => {
      await deleteTeam(request.ctx, request.params.id)
      return reply.code(204).send()
    },
  )
}
export default routes
