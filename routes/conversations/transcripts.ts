import { Readable } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { errorResponses } from '../../schemas/common.js'
import { ConversationIdParams, DownloadQuery, TranscriptBody, TranscriptHeaders, TranscriptQueued } from '../../schemas/transcripts.js'
import { findConversationForCaller } from '../../src/conversations/access.js'
import { conversationNotFound } from '../../src/errors.js'
import { CONTENT_TYPES, loadConversationView, renderTranscript } from '../../src/transcripts/render.js'
import { requestTranscript } from '../../src/transcripts/requests.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:id/download',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: {
        tags: ['conversations'],
        summary: 'Download the transcript (txt, json or html) as an attachment, streamed',
        params: ConversationIdParams,
        querystring: DownloadQuery,
        response: {
          200: Type.String({ description: 'The transcript file (text/plain, application/json or text/html)' }),
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const row = await findConversationForCaller(app.deps.db, request, request.params.id)
      const conversation = await loadConversationView(app.deps.sql, row.id)
      if (!conversation) throw conversationNotFound()
      const format = request.query.format
      reply
        .header('content-type', CONTENT_TYPES[format])
        .header('content-disposition', `attachment; filename="transcript-${conversation.id}.${format}"`)
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'private, no-store')
      // An html transcript is inert even when opened inline: no script, no remote content.
      if (format === 'html') reply.header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
      const stream = Readable.from(renderTranscript(app.deps.sql, conversation, format), { objectMode: false })
      stream.on('error', (err) => request.log.error({ err }, 'transcript stream failed'))
      // A stream bypasses the serializer; the 200 schema documents the file for OpenAPI.
      return reply.send(stream as unknown as string)
    },
  )

  app.post(
    '/:id/transcript',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: {
        tags: ['conversations'],
        summary: 'E-mail the transcript (durable job, retried while SMTP is down)',
        params: ConversationIdParams,
        headers: TranscriptHeaders,
        body: TranscriptBody,
        response: { 200: TranscriptQueued, ...errorResponses(400, 401, 403, 404, 409, 429) },
      },
      // No body at all means {}: the widget may POST without one.
      preValidation: async (request) => {
        if (request.body === undefined || request.body === null) request.body = {}
      },
    },
    async (request) => {
      const row = await findConversationForCaller(app.deps.db, request, request.params.id)
      const { jobId } = await requestTranscript(app, request, row, request.body?.email, request.headers['idempotency-key'])
      return { queued: true as const, jobId }
    },
  )
}
export default routes
