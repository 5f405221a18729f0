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
import { availableAgents } from '../../src/conversations/agents.js'
import { guestHistory, listConversations } from '../../src/conversations/lists.js'

/**
 * The conversation lists. Static paths only: find-my-way matches a static segment before a
 * parameter, so `closed`, `Myconversation`, `available-agents` and `guest/...` are never read as
 * the `:id` of routes/conversations/index.ts, whatever the registration order.
 */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  const errors = errorResponses(400, 401, 403)

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
    async (request) => listConversations(request.ctx, 'open', request.query),
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
    async (request) => listConversations(request.ctx, 'mine', request.query),
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
    async (request) => listConversations(request.ctx, 'closed', request.query),
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
    async (request) => ({ data: await availableAgents(request.ctx) }),
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
    async (request) => guestHistory(request.ctx, request.params.guestId, request.query),
  )
}
export default routes
