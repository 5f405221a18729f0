import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../schemas/common.js'
import { TranscriptBody, TranscriptHeaders, TranscriptQueued } from '../../schemas/transcripts.js'
import { requestTranscript } from '../../src/transcripts/requests.js'

/** /conversations/:id/transcript: e-mails the transcript (a durable job). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/:id/transcript',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: {
        tags: ['conversations'],
        summary: 'E-mail the transcript (durable job, retried while SMTP is down)',
        params: IdParams,
        headers: TranscriptHeaders,
        body: TranscriptBody,
        response: { 200: TranscriptQueued, ...errorResponses(400, 401, 403, 404, 409, 429) },
      },
    },
    async (request) => {
      const { jobId } = await requestTranscript(request.ctx, request.params.id, {
        email: request.body?.email,
        idempotencyKey: request.headers['idempotency-key'],
      })
      return { queued: true as const, jobId }
    },
  )
}
export default routes
