import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AttachmentPage, AttachmentsQuery } from '../../schemas/attachments.js'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { listAttachments } from '../../src/attachments/files.js'

/** /conversations/:id/attachments: the "files" tab. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/attachments',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: {
        tags: ['attachments'],
        summary: "The conversation's attached files, newest attached first (private notes' files for members only)",
        params: IdParams,
        querystring: AttachmentsQuery,
        response: { 200: AttachmentPage, ...errorResponses(400, 401, 403, 404, 500) },
      },
    },
    async (request) => listAttachments(request.ctx, request.params.id, { limit: request.query.limit, cursor: request.query.cursor }),
  )
}
export default routes
