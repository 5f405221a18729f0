import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { BulkBody, BulkResult } from '../../schemas/triage.js'
import { bulkAction } from '../../src/triage/bulk.js'

/** /conversations/bulk (API.md section 17): a fixed word, matched before `/:id` by the router. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/bulk',
    {
      // The permission is the action's (a body field): checked by src/triage/bulk.ts once the body is valid.
      config: { access: { member: 'any' } },
      schema: {
        tags: ['conversations'],
        summary: 'One action on up to 100 conversations, each applied as its single route would',
        body: BulkBody,
        response: { 200: BulkResult, ...errorResponses(400, 401, 403, 415, 429, 500) },
      },
    },
    async (request) => bulkAction(request.ctx, request.body),
  )
}
export default routes
