import { constants } from 'node:zlib'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../schemas/common.js'
import { JavaScript, WidgetQuery } from '../schemas/widget.js'
import { cacheControl, notModified, widgetBundle } from '../src/widget/bundle.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/widget.js',
    {
      // A static asset served from memory: no data is created, so no abuse limit (docs/widget.md).
      config: { access: 'public' },
      // Brotli quality 6: ~2 ms a response and smaller than gzip (the library's default 4 is not).
      compress: { brotliOptions: { params: { [constants.BROTLI_PARAM_QUALITY]: 6, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } } },
      schema: {
        tags: ['widget'],
        summary: 'The web-chat widget: one script for customers\' sites',
        produces: ['text/javascript'],
        querystring: WidgetQuery,
        response: { 200: JavaScript, 304: { type: 'null', description: 'Not modified' }, ...errorResponses(400) },
      },
    },
    async (request, reply) => {
      const bundle = await widgetBundle()
      reply
        .header('content-type', 'text/javascript; charset=utf-8')
        .header('etag', `"${bundle.hash}"`)
        .header('cache-control', cacheControl(bundle, request.query.v))
        // Sites that set Cross-Origin-Embedder-Policy may still load it.
        .header('cross-origin-resource-policy', 'cross-origin')
        .header('x-content-type-options', 'nosniff')
      if (notModified(bundle, request.headers['if-none-match'])) return reply.code(304).send()
      return reply.send(bundle.code)
    },
  )
}
export default routes
