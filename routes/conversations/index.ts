import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { limits } from '../../plugins/rate-limit.js'
import { errorResponses, IdParams, NoBody } from '../../schemas/common.js'
import { AssignBody, Conversation, ConversationPage, CreateConversationBody, OpenListQuery, type ConversationView } from '../../schemas/conversations.js'
import type { Access } from '../../src/auth/callers.js'
import type { Ctx } from '../../src/context.js'
import { PriorityBody, SnoozeBody } from '../../schemas/triage.js'
import { setPriority, setWaiting } from '../../src/triage/status.js'
import { listConversations } from '../../src/conversations/lists.js'
import {
  assignAgent,
  closeConversation,
  createConversation,
  deleteConversation,
  getConversation,
  markSeen,
  reopenConversation,
  setPinned,
  unassignAgent,
} from '../../src/conversations/lifecycle.js'

/**
 * /conversations itself (the open list, a new conversation) and one conversation: `/:id` and its
 * actions. Its sub-resources and the other lists have a file each, named after their segment.
 * Static segments win over `/:id` in the router, and a malformed `:id` is a 404 from
 * src/conversations (never a 400 or 500).
 */
const tags = ['conversations']

const one = { 200: Conversation, ...errorResponses(400, 401, 403, 404, 429, 500) }

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      config: { access: { visitor: true }, rateLimit: limits.visitorConversations(app.config) },
      schema: {
        tags,
        summary: 'Start a conversation (visitor)',
        body: CreateConversationBody,
        response: { 201: Conversation, ...errorResponses(400, 401, 403, 404, 409, 415, 429, 500) },
      },
    },
    async (request, reply) => reply.code(201).send(await createConversation(request.ctx, request.body)),
  )

  app.get(
    '/',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags,
        summary: 'Open conversations, pinned first',
        querystring: OpenListQuery,
        response: { 200: ConversationPage, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => listConversations(request.ctx, 'open', request.query),
  )

  app.get(
    '/:id',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: { tags, summary: 'One conversation', params: IdParams, response: one },
    },
    async (request) => getConversation(request.ctx, request.params.id),
  )

  app.delete(
    '/:id',
    {
      config: { access: { member: 'conversations:delete' } },
      schema: { tags, summary: 'Soft-delete a conversation', params: IdParams, body: NoBody, response: { 204: { type: 'null' }, ...errorResponses(400, 401, 403, 404, 500) } },
    },
    async (request, reply) => {
      await deleteConversation(request.ctx, request.params.id)
      return reply.code(204).send()
    },
  )

  app.patch(
    '/:id/assign-agent',
    {
      config: { access: { member: 'conversations:assign' } },
      schema: { tags, summary: 'Assign an agent', params: IdParams, body: AssignBody, response: one },
    },
    async (request) => (await assignAgent(request.ctx, request.params.id, request.body.agentId)).conversation,
  )

  /**
   * State changes that take no body and answer the conversation: one declaration each, URL first.
   * Each is idempotent (src/conversations/service.ts): repeating one changes nothing.
   */
  const actions: { url: string; access: Access; summary: string; run: (ctx: Ctx, id: string) => Promise<{ conversation: ConversationView }> }[] = [
    { url: '/:id/unassign-agent', access: { member: 'conversations:assign' }, summary: 'Remove the assigned agent', run: unassignAgent },
    { url: '/:id/mark-seen', access: { member: 'conversations:write', visitor: true }, summary: 'Mark seen (agents, or the visitor for the widget)', run: markSeen },
    { url: '/:id/close', access: { member: 'conversations:write' }, summary: 'Resolve', run: closeConversation },
    { url: '/:id/reopen', access: { member: 'conversations:write' }, summary: 'Reopen', run: reopenConversation },
    { url: '/:id/pin', access: { member: 'conversations:write' }, summary: 'Pin', run: (ctx, id) => setPinned(ctx, id, true) },
    { url: '/:id/unpin', access: { member: 'conversations:write' }, summary: 'Unpin', run: (ctx, id) => setPinned(ctx, id, false) },
    { url: '/:id/pending', access: { member: 'conversations:write' }, summary: 'Wait on the customer (PENDING)', run: (ctx, id) => setWaiting(ctx, id, { status: 'PENDING' }) },
  ]
  for (const action of actions) {
    app.patch(
      action.url,
      { config: { access: action.access }, schema: { tags, summary: action.summary, params: IdParams, body: NoBody, response: one } },
      async (request) => (await action.run(request.ctx, request.params.id)).conversation,
    )
  }

  // Triage (API.md section 17, src/triage/status.ts)
  app.patch(
    '/:id/priority',
    {
      config: { access: { member: 'conversations:write' } },
      schema: { tags, summary: 'Set the priority (null: none)', params: IdParams, body: PriorityBody, response: one },
    },
    async (request) => (await setPriority(request.ctx, request.params.id, request.body.priority)).conversation,
  )

  app.patch(
    '/:id/snooze',
    {
      config: { access: { member: 'conversations:write' } },
      schema: { tags, summary: 'Snooze until a time, or (null) until the guest writes', params: IdParams, body: SnoozeBody, response: one },
    },
    async (request) => (await setWaiting(request.ctx, request.params.id, { status: 'SNOOZED', until: request.body.until })).conversation,
  )
}
export default routes
