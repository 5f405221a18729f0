import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { Html } from '../../schemas/widget.js'
import { demoPage } from '../../src/demo/pages.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      // Development only (404 in production); a static page, so no abuse limit.
      config: { access: 'public' },
      compress: {},
      schema: {
        tags: ['widget'],
        summary: 'Development demo: a fictional shop with the widget beside a minimal agent pane (404 in production)',
        produces: ['text/html'],
        response: { 200: Html, ...errorResponses(404) },
      },
    },
    async (request, reply) => reply.header('content-type', 'text/html; charset=utf-8').cacheControl('no-store').send(demoPage(request.ctx)),
  )
}
export default routes
