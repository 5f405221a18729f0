import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { MediaQuery } from '../../schemas/attachments.js'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { openMedia } from '../../src/attachments/media.js'

/** /media/:id: a file's bytes, streamed, with the headers that make serving it safe. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id',
    {
      // A signed link (?token=) needs no credentials: the domain checks the token.
      config: { access: { member: 'conversations:read', visitor: true, anonymous: true } },
      schema: {
        tags: ['attachments'],
        summary: 'A file (or ?variant=thumb), streamed; ETag/304, Range/206; 302 to the store with MEDIA_REDIRECT',
        params: IdParams,
        querystring: MediaQuery,
        response: {
          200: Type.String({ description: 'the file, with its detected Content-Type' }),
          206: Type.String({ description: 'a range of the file' }),
          302: Type.Null({ description: 'MEDIA_REDIRECT: a presigned URL of the store' }),
          304: Type.Null({ description: 'If-None-Match matched' }),
          ...errorResponses(400, 401, 403, 404, 416, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const h = (name: string) => (typeof request.headers[name] === 'string' ? (request.headers[name] as string) : undefined)
      const answer = await openMedia(request.ctx, request.params.id, {
        query: request.query,
        range: h('range'),
        ifNoneMatch: h('if-none-match'),
        ifRange: h('if-range'),
      })
      reply.headers(answer.headers)
      if (answer.kind === 'redirect') return reply.redirect(answer.location, 302)
      if (answer.kind === 'not-modified') return reply.code(304).send(null)
      answer.stream.on('error', (err) => request.log.warn({ err: { message: err.message } }, 'media stream failed'))
      // A stream bypasses the serializer; the schemas document the file for OpenAPI.
      return reply.code(answer.status).send(answer.stream as unknown as string)
    },
  )
}
export default routes
