import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams, NoBody } from '../../schemas/common.js'
import { CreateLabelBody, Label, LabelList, UpdateLabelBody } from '../../schemas/triage.js'
import { createLabel, deleteLabel, listLabels, updateLabel } from '../../src/triage/labels.js'

/** /labels (API.md section 17). Rules live in src/triage/labels.ts. */
const tags = ['labels']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: { member: 'conversations:read' } },
      schema: { tags, summary: "The workspace's labels, by name", response: { 200: LabelList, ...errorResponses(400, 401, 403) } },
    },
    async (request) => listLabels(request.ctx),
  )

  app.post(
    '/',
    {
      config: { access: { member: 'labels:manage' } },
      schema: { tags, summary: 'Create a label', body: CreateLabelBody, response: { 201: Label, ...errorResponses(400, 401, 403, 409, 415) } },
    },
    async (request, reply) => reply.code(201).send(await createLabel(request.ctx, request.body)),
  )

  app.patch(
    '/:id',
    {
      config: { access: { member: 'labels:manage' } },
      schema: { tags, summary: 'Change a label', params: IdParams, body: UpdateLabelBody, response: { 200: Label, ...errorResponses(400, 401, 403, 404, 409, 415) } },
    },
    async (request) => updateLabel(request.ctx, request.params.id, request.body),
  )

  app.delete(
    '/:id',
    {
      config: { access: { member: 'labels:manage' } },
      schema: { tags, summary: 'Delete a label (it leaves every conversation)', params: IdParams, body: NoBody, response: { 204: { type: 'null' }, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request, reply) => {
      await deleteLabel(request.ctx, request.params.id)
      return reply.code(204).send()
    },
  )
}
export default routes
