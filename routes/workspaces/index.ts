import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import { CreateWorkspaceBody, Workspace, WorkspaceList } from '../../schemas/workspaces.js'
import { createWorkspace, listWorkspaces } from '../../src/workspaces/workspaces.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      config: { access: { member: 'any', workspace: false } },
      schema: {
        tags: ['workspaces'],
        summary: 'Create a workspace; the caller becomes its owner',
        body: CreateWorkspaceBody,
        response: { 201: Workspace, ...errorResponses(400, 401, 415) },
      },
    },
    async (request, reply) => {
      const ws = await createWorkspace(request.ctx, request.body)
      return reply.code(201).send(ws)
    },
  )

  app.get(
    '/',
    {
      config: { access: { member: 'any', workspace: false } },
      schema: {
        tags: ['workspaces'],
        summary: "The caller's active memberships",
        response: { 200: WorkspaceList, ...errorResponses(401) },
      },
    },
    async (request) => ({ data: await listWorkspaces(request.ctx) }),
  )
}
export default routes
