import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams, NoBody } from '../../schemas/common.js'
import { Mention, MentionCount, MentionListQuery, MentionPage, ReadAllResult } from '../../schemas/mentions.js'
import { listMentions, readAllMentions, readMention, unreadMentions } from '../../src/mentions/mentions.js'

/** /mentions: the caller's own mentions (API.md section 12). */
const tags = ['mentions']

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      config: { access: { member: 'any' } },
      schema: { tags, summary: "The caller's mentions, newest first", querystring: MentionListQuery, response: { 200: MentionPage, ...errorResponses(400, 401, 403) } },
    },
    async (request) => listMentions(request.ctx, request.query),
  )

  app.get(
    '/unread-count',
    {
      config: { access: { member: 'any' } },
      schema: { tags, summary: "The caller's unread mentions", response: { 200: MentionCount, ...errorResponses(400, 401, 403) } },
    },
    async (request) => unreadMentions(request.ctx),
  )

  app.patch(
    '/:id/read',
    {
      config: { access: { member: 'any' } },
      schema: { tags, summary: 'Mark one of the caller\'s mentions read', params: IdParams, body: NoBody, response: { 200: Mention, ...errorResponses(400, 401, 403, 404) } },
    },
    async (request) => readMention(request.ctx, request.params.id),
  )

  app.post(
    '/read-all',
    {
      config: { access: { member: 'any' } },
      schema: { tags, summary: "Mark all the caller's mentions read", body: NoBody, response: { 200: ReadAllResult, ...errorResponses(400, 401, 403) } },
    },
    async (request) => readAllMentions(request.ctx),
  )
}
export default routes
