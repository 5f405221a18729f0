import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { DemoShopQuery, Html } from '../../schemas/widget.js'
import { assertDemoAllowed, shopPage } from '../../src/demo/pages.js'
import { widgetBundle } from '../../src/widget/bundle.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/shop',
    {
      config: { access: 'public' },
      compress: {},
      schema: {
        tags: ['widget'],
        summary: 'Development demo: the fictional shop page with the widget of a channel (404 in production)',
        produces: ['text/html'],
        querystring: DemoShopQuery,
        response: { 200: Html, ...errorResponses(400, 404) },
      },
    },
    async (request, reply) => {
      assertDemoAllowed(request.ctx)
      const { hash } = await widgetBundle()
      return reply.header('content-type', 'text/html; charset=utf-8').cacheControl('no-store').send(shopPage(request.ctx, request.query, hash))
    },
  )
}
export default routes
