import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { JavaScript } from '../../schemas/widget.js'
import { assertDemoAllowed } from '../../src/demo/pages.js'
import { demoAgentBundle } from '../../src/widget/bundle.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/agent.js',
    {
      config: { access: 'public' },
      compress: {},
      schema: {
        tags: ['widget'],
        summary: "Development demo: the agent pane's script (404 in production)",
        produces: ['text/javascript'],
        response: { 200: JavaScript, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      assertDemoAllowed(request.ctx)
      const code = await demoAgentBundle()
      return reply.header('content-type', 'text/javascript; charset=utf-8').cacheControl('no-store').send(code)
    },
  )
}
export default routes
