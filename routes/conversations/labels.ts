import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { Conversation } from '../../schemas/conversations.js'
import { SetLabelsBody } from '../../schemas/triage.js'
import { changeLabels } from '../../src/triage/labels.js'

/** /conversations/:id/labels (API.md section 17) */
const tags = ['conversations']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.put(
    '/:id/labels',
    {
      config: { access: { member: 'conversations:write' } },
      schema: {
        tags,
        summary: "Replace the conversation's labels (0..20 labels of the workspace)",
        params: IdParams,
        body: SetLabelsBody,
        response: { 200: Conversation, ...errorResponses(400, 401, 403, 404, 415, 500) },
      },
    },
    async (request) => (await changeLabels(request.ctx, request.params.id, { set: request.body.labelIds })).conversation,
  )
}
export default routes
