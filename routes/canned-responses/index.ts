import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CannedListQuery, CannedPage, CannedResponse, CreateCannedBody, RenderBody, RenderResult, UpdateCannedBody } from '../../schemas/canned.js'
import { errorResponses, IdParams, NoBody } from '../../schemas/common.js'
import { createCanned, deleteCanned, listCanned, renderCanned, updateCanned } from '../../src/canned/canned.js'

/** /canned-responses (API.md section 11). Scope rules live in src/canned/canned.ts. */
const tags = ['canned-responses']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags,
        summary: "The workspace's responses and the caller's personal ones; with q, the / picker's ranking",
        querystring: CannedListQuery,
        response: { 200: CannedPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => listCanned(request.ctx, request.query),
  )

  app.post(
    '/',
    {
      // Any member for a personal response; a workspace one needs canned:manage (checked once the body is valid).
      config: { access: { member: 'any' } },
      schema: { tags, summary: 'Create a canned response', body: CreateCannedBody, response: { 201: CannedResponse, ...errorResponses(400, 401, 403, 409, 415) } },
    },
    async (request, reply) => reply.code(201).send(await createCanned(request.ctx, request.body)),
  )

  app.patch(
    '/:id',
    {
      config: { access: { member: 'any' } },
      schema: { tags, summary: 'Change a canned response', params: IdParams, body: UpdateCannedBody, response: { 200: CannedResponse, ...errorResponses(400, 401, 403, 404, 409, 415) } },
    },
    async (request) => updateCanned(request.ctx, request.params.id, request.body),
  )

  app.delete(
    '/:id',
    {
      config: { access: { member: 'any' } },
      schema: { tags, summary: 'Delete a canned response', params: IdParams, body: NoBody, response: { 204: { type: 'null' }, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request, reply) => {
      await deleteCanned(request.ctx, request.params.id)
      return reply.code(204).send()
    },
  )

  app.post(
    '/:id/render',
    {
      config: { access: { member: 'conversations:write' } },
      schema: {
        tags,
        summary: "Fill the response's variables for a conversation (counts one use)",
        params: IdParams,
        body: RenderBody,
        response: { 200: RenderResult, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => renderCanned(request.ctx, request.params.id, request.body),
  )
}
export default routes
