import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, NoBody } from '../../schemas/common.js'
import { CreateMemberBody, Member, MemberListQuery, MemberPage, MemberParams, UpdateMemberBody } from '../../schemas/auth.js'
import { addMember, listMembers, removeMember, updateMember } from '../../src/auth/member-admin.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/members',
    {
      config: { access: { member: 'members:read' } },
      schema: {
        tags: ['members'],
        summary: "The workspace's members, oldest membership first",
        querystring: MemberListQuery,
        response: { 200: MemberPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => listMembers(request.ctx, request.query),
  )

  app.post(
    '/members',
    {
      config: { access: { member: 'members:manage' } },
      schema: {
        tags: ['members'],
        summary: 'Add a member (only an owner may grant owner)',
        body: CreateMemberBody,
        response: { 201: Member, ...errorResponses(400, 401, 403, 409, 415) },
      },
    },
    async (request, reply) => reply.code(201).send(await addMember(request.ctx, request.body)),
  )

  app.patch(
    '/members/:userId',
    {
      config: { access: { member: 'members:manage' } },
      schema: {
        tags: ['members'],
        summary: "Change a member's role or status (the last active owner stays)",
        params: MemberParams,
        body: UpdateMemberBody,
        response: { 200: Member, ...errorResponses(400, 401, 403, 404, 409, 415) },
      },
    },
    async (request) => updateMember(request.ctx, request.params.userId, request.body),
  )

  app.delete(
    '/members/:userId',
    {
      config: { access: { member: 'members:manage' } },
      schema: {
        tags: ['members'],
        summary: 'Remove a member (not the last active owner)',
        params: MemberParams,
        body: NoBody,
        response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request, reply) => {
      await removeMember(request.ctx, request.params.userId)
      return reply.code(204).send()
    },
  )
}
export default routes
