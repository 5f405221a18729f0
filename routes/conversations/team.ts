import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { Conversation } from '../../schemas/conversations.js'
import { ConversationTeamBody } from '../../schemas/teams.js'
import { setConversationTeam } from '../../src/conversations/lifecycle.js'

/** /conversations/:id/team (API.md section 16). */
const tags = ['conversations']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.patch(
    '/:id/team',
    {
      config: { access: { member: 'conversations:assign' } },
      schema: {
        tags,
        summary: "Move the conversation to a team (or none); its assignee stays only if they belong to it",
        params: IdParams,
        body: ConversationTeamBody,
        response: { 200: Conversation, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => (await setConversationTeam(request.ctx, request.params.id, request.body.teamId)).conversation,
  )
}
export default routes
