import { Readable } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { DownloadQuery } from '../../schemas/transcripts.js'
import { transcriptFile } from '../../src/transcripts/render.js'

/** /conversations/:id/download: the transcript as a file, streamed. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/download',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: {
        tags: ['conversations'],
        summary: 'Download the transcript (txt, json or html) as an attachment, streamed',
        params: IdParams,
        querystring: DownloadQuery,
        response: {
          200: Type.String({ description: 'The transcript file (text/plain, application/json or text/html)' }),
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const format = request.query.format
      const file = await transcriptFile(request.ctx, request.params.id, format)
      reply
        .header('content-type', file.contentType)
        .header('content-disposition', `attachment; filename="${file.filename}"`)
        .header('x-content-type-options', 'nosniff')
        .cacheControl('private').cacheControl('no-store')
      // An html transcript is inert even when opened inline: no script, no remote content.
      if (format === 'html') reply.header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
      const stream = Readable.from(file.chunks, { objectMode: false })
      stream.on('error', (err) => request.log.error({ err }, 'transcript stream failed'))
      // A stream bypasses the serializer; the 200 schema documents the file for OpenAPI.
      return reply.send(stream as unknown as string)
    },
  )
}
export default routes
