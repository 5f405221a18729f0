import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { Conversation } from '../../schemas/conversations.js'
import { SetSlaBody } from '../../schemas/sla.js'
import { setConversationSla } from '../../src/sla/policies.js'

/** /conversations/:id/sla (API.md section 18). */
const tags = ['conversations']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.patch(
    '/:id/sla',
    {
      config: { access: { member: 'conversations:assign' } },
      schema: {
        tags,
        summary: 'Choose its SLA policy by hand (or none); the choice stays until changed by hand',
        params: IdParams,
        body: SetSlaBody,
        response: { 200: Conversation, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => (await setConversationSla(request.ctx, request.params.id, request.body.policyId)).conversation,
  )
}
export default routes
