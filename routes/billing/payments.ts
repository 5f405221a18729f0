import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PaymentsPage, PaymentsQuery } from '../../schemas/billing.js'
import { errorResponses } from '../../schemas/common.js'
import { listPayments } from '../../src/billing/queries.js'

/** /billing/payments */
const routes: FastifyPluginAsyncTypebox = async (app) => {
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
    async (request) => listPayments(request.ctx, request.query),
  )
}
export default routes
