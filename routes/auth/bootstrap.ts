import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { VisitorBootstrapBody, VisitorSession } from '../../schemas/auth.js'
import { errorResponses } from '../../schemas/common.js'
import { bootstrapVisitor } from '../../src/auth/bootstrap.js'
import { isUuid } from '../../src/uuid.js'

const header = (request: FastifyRequest, name: string) => {
  const v = request.headers[name]
  return typeof v === 'string' && v !== '' ? v : undefined
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      config: {
        access: 'public',
        // Per client address and channel, counted in Redis so every replica shares the budget.
        // preValidation: the body is parsed (channelId is known) and malformed attempts count too.
        rateLimit: {
          max: app.config.AUTH_RATE_LIMIT_PER_MIN,
          timeWindow: 60_000,
          hook: 'preValidation',
          keyGenerator: (request: FastifyRequest) => {
            const channelId = (request.body as { channelId?: unknown } | undefined)?.channelId
            const channel = isUuid(channelId) ? channelId.toLowerCase() : '-'
            return `auth:${request.ip}:${channel}`
          },
        },
      },
      schema: {
        tags: ['auth'],
        summary: 'Visitor bootstrap: a new or resumed guest and its visitor session',
        body: VisitorBootstrapBody,
        response: { 200: VisitorSession, 201: VisitorSession, ...errorResponses(400, 401, 403, 404, 415, 429) },
      },
    },
    async (request, reply) => {
      const result = await bootstrapVisitor(request.ctx, request.body, {
        origin: header(request, 'origin'),
        channelToken: header(request, 'x-channel-token'),
        visitorSession: header(request, 'x-visitor-session'),
      })
      return reply.code(result.created ? 201 : 200).send(result.body)
    },
  )
}
export default routes
