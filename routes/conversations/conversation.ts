import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { preValidationHookHandler } from 'fastify'
import { badRequest } from '../../src/errors.js'
import { Conversation, Message } from '../../schemas/conversations.js'
import { errorResponses, IdParams } from '../../schemas/common.js'
import {
  AssignBody,
  CreateConversationBody,
  HistoryList,
  MessagePage,
  MessagesQuery,
  PostMessageBody,
} from '../../schemas/conversation-ops.js'
import { listMessages, postMessage } from '../../src/conversations/messages.js'
import {
  assignAgent,
  assignmentHistory,
  closeConversation,
  createConversation,
  deleteConversation,
  getConversation,
  markSeen,
  reopenConversation,
  setPinned,
  unassignAgent,
} from '../../src/conversations/service.js'

/**
 * One conversation and its messages. The lists (GET /, /Myconversation, /closed, history, ...)
 * live in lists.ts; counters in counts.ts. Static paths win over `/:id` in the router, and a
 * malformed `:id` is a 404 from src/conversations (never a 400 or 500).
 */
const tags = ['conversations']

/**
 * For routes that take no body: an empty body, `{}` or `null` pass; any field is an unknown
 * field (400), as on every other route. (A body schema would refuse the empty body itself.)
 */
const noBody: preValidationHookHandler = async (request) => {
  const body = request.body
  if (body === undefined || body === null) return
  if (typeof body !== 'object' || Array.isArray(body)) throw badRequest('body must be empty or an object')
  const [field] = Object.keys(body)
  if (field !== undefined) throw badRequest(`unknown field '${field}'`)
}
const one = { 200: Conversation, ...errorResponses(400, 401, 403, 404, 429, 500) }

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      config: { access: { visitor: true } },
      schema: {
        tags,
        summary: 'Start a conversation (visitor)',
        body: CreateConversationBody,
        response: { 201: Conversation, ...errorResponses(400, 401, 403, 404, 415, 500) },
      },
    },
    async (request, reply) => reply.code(201).send(await createConversation(request.ctx, request.body)),
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
      schema: { tags, summary: 'Soft-delete a conversation', params: IdParams, response: { 204: { type: 'null' }, ...errorResponses(401, 403, 404, 500) } },
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

  app.patch(
    '/:id/unassign-agent',
    {
      preValidation: noBody,
      config: { access: { member: 'conversations:assign' } },
      schema: { tags, summary: 'Remove the assigned agent', params: IdParams, response: one },
    },
    async (request) => (await unassignAgent(request.ctx, request.params.id)).conversation,
  )

  app.get(
    '/:id/assignment-history',
    {
      config: { access: { member: 'conversations:read' } },
      schema: { tags, summary: 'Assignment history, newest first', params: IdParams, response: { 200: HistoryList, ...errorResponses(401, 403, 404, 500) } },
    },
    async (request) => ({ data: await assignmentHistory(request.ctx, request.params.id) }),
  )

  app.patch(
    '/:id/mark-seen',
    {
      preValidation: noBody,
      config: { access: { member: 'conversations:write', visitor: true } },
      schema: { tags, summary: 'Mark seen (agents, or the visitor for the widget)', params: IdParams, response: one },
    },
    async (request) => (await markSeen(request.ctx, request.params.id)).conversation,
  )

  app.patch(
    '/:id/close',
    {
      preValidation: noBody,
      config: { access: { member: 'conversations:write' } },
      schema: { tags, summary: 'Resolve', params: IdParams, response: one },
    },
    async (request) => (await closeConversation(request.ctx, request.params.id)).conversation,
  )

  app.patch(
    '/:id/reopen',
    {
      preValidation: noBody,
      config: { access: { member: 'conversations:write' } },
      schema: { tags, summary: 'Reopen', params: IdParams, response: one },
    },
    async (request) => (await reopenConversation(request.ctx, request.params.id)).conversation,
  )

  app.patch(
    '/:id/pin',
    {
      preValidation: noBody,
      config: { access: { member: 'conversations:write' } },
      schema: { tags, summary: 'Pin', params: IdParams, response: one },
    },
    async (request) => (await setPinned(request.ctx, request.params.id, true)).conversation,
  )

  app.patch(
    '/:id/unpin',
    {
      preValidation: noBody,
      config: { access: { member: 'conversations:write' } },
      schema: { tags, summary: 'Unpin', params: IdParams, response: one },
    },
    async (request) => (await setPinned(request.ctx, request.params.id, false)).conversation,
  )

  app.post(
    '/:id/messages',
    {
      config: { access: { member: 'conversations:write', visitor: true } },
      schema: {
        tags,
        summary: 'Send a message (a retried clientMessageId returns the first one with 200)',
        params: IdParams,
        body: PostMessageBody,
        response: { 200: Message, 201: Message, ...errorResponses(400, 401, 403, 404, 413, 415, 500) },
      },
    },
    async (request, reply) => {
      const { message, created } = await postMessage(request.ctx, request.params.id, request.body)
      return reply.code(created ? 201 : 200).send(message)
    },
  )

  app.get(
    '/:id/messages',
    {
      config: { access: { member: 'conversations:read', visitor: true } },
      schema: { tags, summary: 'Messages, oldest first', params: IdParams, querystring: MessagesQuery, response: { 200: MessagePage, ...errorResponses(400, 401, 403, 404, 500) } },
    },
    async (request) => listMessages(request.ctx, request.params.id, { limit: request.query.limit ?? 20, cursor: request.query.cursor }),
  )
}
export default routes
