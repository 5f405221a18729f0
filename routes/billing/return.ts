import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ReturnQuery } from '../../schemas/billing.js'
import { errorResponses } from '../../schemas/common.js'
import { checkoutReturnUrl } from '../../src/billing/checkout.js'
import { billingProviders } from '../../src/db/vocabulary.js'

/** /billing/<provider>/return: the browser's way back from a provider's checkout, to the app. */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  for (const provider of billingProviders) {
    app.get(
      `/${provider}/return`,
      {
        config: { access: 'public', providerFacing: true },
        schema: {
          tags: ['billing'],
          summary: `Browser return from ${provider} checkout`,
          querystring: ReturnQuery,
          response: { 303: { type: 'null', description: 'Redirect to the app' }, ...errorResponses(400) },
        },
      },
      async (request, reply) =>
        reply.cacheControl('no-store').redirect(checkoutReturnUrl(request.ctx, provider, request.query.status), 303),
    )
  }
}
export default routes
