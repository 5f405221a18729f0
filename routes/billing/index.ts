import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { cursorCodec } from '../../src/cursor.js'
import { getSubscription, listPayments } from '../../src/billing/queries.js'
import { errorResponses } from '../../schemas/common.js'
import { PaymentsPage, PaymentsQuery, ReturnQuery, Subscription } from '../../schemas/billing.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const codec = cursorCodec(app.config)

  // Browser return routes: only a redirect to the app, never a state change (webhooks are the
  // source of truth). Any status other than "success" is reported as "cancel", so no
  // caller-supplied text is ever reflected into the redirect.
  for (const provider of ['provider-a', 'provider-b'] as const) {
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
      async (request, reply) => {
        const status = request.query.status === 'success' ? 'success' : 'cancel'
        // <APP_URL>/billing, keeping any path APP_URL has (the app may live under one).
        const url = `${app.config.APP_URL.replace(/\/+$/, '')}/billing?${new URLSearchParams({ provider, status })}`
        return reply.header('cache-control', 'no-store').redirect(url, 303)
      },
    )
  }

  app.get(
    '/subscription',
    {
      config: { access: { member: 'billing:read' } },
      schema: { tags: ['billing'], summary: "The workspace's subscription", response: { 200: Subscription, ...errorResponses(400, 401, 403) } },
    },
    async (request) => getSubscription(app.sql, request.member!.workspaceId),
  )

  app.get(
    '/payments',
    {
      config: { access: { member: 'billing:read' } },
      schema: {
        tags: ['billing'],
        summary: 'Payment ledger, newest first',
        querystring: PaymentsQuery,
        response: { 200: PaymentsPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => listPayments(app.sql, codec, request.member!.workspaceId, request.query.limit, request.query.cursor),
  )
}
export default routes
