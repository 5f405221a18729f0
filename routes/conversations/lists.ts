import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../schemas/common.js'
import {
  AvailableAgents,
  ClosedListQuery,
  ConversationPage,
  HistoryParams,
  HistoryQuery,
  MineListQuery,
  OpenListQuery,
} from '../../schemas/conversation-lists.js'
import { isUuid } from '../../src/conversations/access.js'
import { availableAgents } from '../../src/conversations/agents.js'
import { guestExists, guestHistory, listConversations, type ListCaller } from '../../src/conversations/lists.js'
import { cursorCodec } from '../../src/cursor.js'
import { notFound } from '../../src/errors.js'

/**
 * The conversation lists. Static paths only: find-my-way matches a static segment before a
 * parameter, so `closed`, `Myconversation`, `available-agents` and `guest/...` are never read as
 * the `:id` of routes/conversations/index.ts, whatever the registration order.
 */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  const codec = cursorCodec(app.config)
  const errors = errorResponses(400, 401, 403)
  const caller = (m: { workspaceId: string; userId: string } | undefined): ListCaller => ({
    workspaceId: m!.workspaceId,
    userId: m!.userId,
  })

  app.get(
    '/',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags: ['conversations'],
        summary: 'Open conversations, pinned first',
        querystring: OpenListQuery,
        response: { 200: ConversationPage, ...errors },
      },
    },
    async (request) => listConversations(app.deps.sql, codec, 'open', caller(request.member), request.query),
  )

  app.get(
    '/Myconversation',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags: ['conversations'],
        summary: "The caller's assigned conversations (any status), pinned first",
        querystring: MineListQuery,
        response: { 200: ConversationPage, ...errors },
      },
    },
    async (request) => listConversations(app.deps.sql, codec, 'mine', caller(request.member), request.query),
  )

  app.get(
    '/closed',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags: ['conversations'],
        summary: 'Resolved (and legacy CLOSED) conversations, newest closedAt first by default',
        querystring: ClosedListQuery,
        response: { 200: ConversationPage, ...errors },
      },
    },
    async (request) => listConversations(app.deps.sql, codec, 'closed', caller(request.member), request.query),
  )

  app.get(
    '/available-agents',
    {
      config: { access: { member: 'conversations:assign' } },
      schema: {
        tags: ['conversations'],
        summary: 'Active members with presence, online first, then fewest open assigned',
        response: { 200: AvailableAgents, ...errors },
      },
    },
    async (request) => ({
      data: await availableAgents(app.deps.sql, app.deps.redis, app.config.REDIS_PREFIX, request.member!.workspaceId, request.log),
    }),
  )

  app.get(
    '/guest/:guestId/history',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: {
        tags: ['conversations'],
        summary: "A guest's conversations, newest first (members, or that guest's visitor)",
        params: HistoryParams,
        querystring: HistoryQuery,
        response: { 200: ConversationPage, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const guestNotFound = () => notFound('GUEST_NOT_FOUND', 'Guest not found')
      const guestId = request.params.guestId.toLowerCase()
      if (!isUuid(guestId)) throw guestNotFound()
      let workspaceId: string
      if (request.member) {
        workspaceId = request.member.workspaceId
        if (!(await guestExists(app.deps.sql, workspaceId, guestId))) throw guestNotFound()
      } else {
        // A visitor sees only its own guest: any other id is "not found", never "forbidden".
        if (request.visitor!.guestId.toLowerCase() !== guestId) throw guestNotFound()
        workspaceId = request.visitor!.workspaceId
      }
      return guestHistory(app.deps.sql, codec, workspaceId, guestId, request.query)
    },
  )
}
export default routes
