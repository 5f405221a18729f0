import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams, NoBody } from '../../schemas/common.js'
import { CreateSlaPolicyBody, SlaPolicy, SlaPolicyList, UpdateSlaPolicyBody } from '../../schemas/sla.js'
import { createPolicy, deletePolicy, listPolicies, updatePolicy } from '../../src/sla/policies.js'

/** /sla-policies (API.md section 18). Rules live in src/sla/policies.ts. */
const tags = ['sla']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: { member: 'conversations:read' } },
      schema: { tags, summary: "The workspace's SLA policies, by position", response: { 200: SlaPolicyList, ...errorResponses(400, 401, 403) } },
    },
    async (request) => listPolicies(request.ctx),
  )

  app.post(
    '/',
    {
      config: { access: { member: 'sla:manage' } },
      schema: { tags, summary: 'Create an SLA policy', body: CreateSlaPolicyBody, response: { 201: SlaPolicy, ...errorResponses(400, 401, 403, 415) } },
    },
    async (request, reply) => reply.code(201).send(await createPolicy(request.ctx, request.body)),
  )

  app.patch(
    '/:id',
    {
      config: { access: { member: 'sla:manage' } },
      schema: {
        tags,
        summary: 'Change an SLA policy (a change of its targets or hours recomputes its open conversations)',
        params: IdParams,
        body: UpdateSlaPolicyBody,
        response: { 200: SlaPolicy, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => updatePolicy(request.ctx, request.params.id, request.body),
  )

  app.delete(
    '/:id',
    {
      config: { access: { member: 'sla:manage' } },
      schema: {
        tags,
        summary: 'Delete an SLA policy (it leaves its conversations)',
        params: IdParams,
        body: NoBody,
        response: { 204: { type: 'null' }, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      await deletePolicy(request.ctx, request.params.id)
      return reply.code(204).send()
    },
  )
}
export default routes
