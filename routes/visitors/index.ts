import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { GuestParams, UpdateVisitorBody, Visitor, VisitorListQuery, VisitorPage, VisitorProfile } from '../../schemas/visitors.js'
import { getVisitor, listVisitors, updateVisitor } from '../../src/visitors/visitors.js'

/** /visitors: the workspace's contacts (API.md section 13). */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: { member: 'visitors:read' } },
      schema: {
        tags: ['visitors'],
        summary: "The workspace's visitors, most recent lastSeenAt first (q: substring of name or e-mail)",
        querystring: VisitorListQuery,
        response: { 200: VisitorPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => listVisitors(request.ctx, request.query),
  )

  app.get(
    '/:guestId',
    {
      config: { access: { member: 'visitors:read' } },
      schema: {
        tags: ['visitors'],
        summary: 'A visitor and its last 20 page visits',
        params: GuestParams,
        response: { 200: VisitorProfile, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => getVisitor(request.ctx, request.params.guestId),
  )

  app.patch(
    '/:guestId',
    {
      config: { access: { member: 'visitors:write' } },
      schema: {
        tags: ['visitors'],
        summary: "Change a visitor's name, e-mail or attributes (merged; null removes a key)",
        params: GuestParams,
        body: UpdateVisitorBody,
        response: { 200: Visitor, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => updateVisitor(request.ctx, request.params.guestId, request.body),
  )
}
export default routes
