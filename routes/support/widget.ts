import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { limits } from '../../plugins/rate-limit.js'
import { errorResponses } from '../../schemas/common.js'
import { WidgetConfig } from '../../schemas/support.js'
import { notModified, widgetConfig } from '../../src/support/widget-settings.js'

/** /support/widget/:channelId: the widget's configuration, asked on every page load. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/widget/:channelId',
    {
      config: { access: 'public', rateLimit: limits.support(app.config) },
      schema: {
        tags: ['support'],
        summary: "A channel's widget configuration: look, online, office hours (ETag, cacheable 30 s)",
        params: Type.Object({ channelId: Type.String() }),
        response: { 200: WidgetConfig, 304: Type.Null({ description: 'Not modified (If-None-Match)' }), ...errorResponses(400, 401, 404, 429) },
      },
    },
    async (request, reply) => {
      const token = request.headers['x-channel-token']
      const { body, etag } = await widgetConfig(request.ctx, request.params.channelId, typeof token === 'string' ? token : undefined)
      // The answer depends on x-channel-token (401 without the right one): a shared cache must
      // key on it, or it hands a token-protected channel's 200 to callers without the token.
      // Appended: CORS has already set Vary: Origin.
      reply.header('etag', etag).cacheControl('public').cacheControl('max-age', 30).vary('x-channel-token')
      if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).send(null)
      return body
    },
  )
}
export default routes
