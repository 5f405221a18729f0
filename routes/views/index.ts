import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams, NoBody } from '../../schemas/common.js'
import { CreateViewBody, UpdateViewBody, View, ViewList } from '../../schemas/triage.js'
import { createView, deleteView, listViews, updateView } from '../../src/triage/views.js'

/** /views (API.md section 17): saved views. Scope rules live in src/triage/views.ts. */
const tags = ['views']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: { member: 'conversations:read' } },
      schema: { tags, summary: "The workspace's views and the caller's personal ones", response: { 200: ViewList, ...errorResponses(400, 401, 403) } },
    },
    async (request) => listViews(request.ctx),
  )

  app.post(
    '/',
    {
      // Any member for a personal view; a workspace view needs labels:manage (checked once the body is valid).
      config: { access: { member: 'any' } },
      schema: { tags, summary: 'Save a view', body: CreateViewBody, response: { 201: View, ...errorResponses(400, 401, 403, 409, 415) } },
    },
    async (request, reply) => reply.code(201).send(await createView(request.ctx, request.body)),
  )

  app.patch(
    '/:id',
    {
      config: { access: { member: 'any' } },
      schema: { tags, summary: 'Change a view', params: IdParams, body: UpdateViewBody, response: { 200: View, ...errorResponses(400, 401, 403, 404, 415) } },
    },
    async (request) => updateView(request.ctx, request.params.id, request.body),
  )

  app.delete(
    '/:id',
    {
      config: { access: { member: 'any' } },
      schema: { tags, summary: 'Delete a view', params: IdParams, body: NoBody, response: { 204: { type: 'null' }, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request, reply) => {
      await deleteView(request.ctx, request.params.id)
      return reply.code(204).send()
    },
  )
}
export default routes
