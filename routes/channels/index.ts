import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ChannelList, Channel, CreateChannelBody, EmailCheckResult, UpdateChannelBody } from '../../schemas/channels.js'
import { errorResponses, IdParams, NoBody } from '../../schemas/common.js'
import { createChannel, listChannels, rotateChannelToken, updateChannel } from '../../src/channels/channels.js'
import { checkEmailChannel } from '../../src/email/check.js'

const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/',
    {
      config: { access: { member: 'channels:manage' } },
      schema: {
        tags: ['channels'],
        summary: 'Create a web or e-mail channel',
        body: CreateChannelBody,
        response: { 201: Channel, ...errorResponses(400, 401, 403, 415, 503) },
      },
    },
    async (request, reply) => reply.code(201).send(await createChannel(request.ctx, request.body)),
  )

  app.get(
    '/',
    {
      config: { access: { member: 'conversations:read' } },
      schema: {
        tags: ['channels'],
        summary: "The workspace's channels (identitySecret only with channels:manage)",
        response: { 200: ChannelList, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => listChannels(request.ctx),
  )

  app.patch(
    '/:id',
    {
      config: { access: { member: 'channels:manage' } },
      schema: {
        tags: ['channels'],
        summary: 'Change a channel',
        params: IdParams,
        body: UpdateChannelBody,
        response: { 200: Channel, ...errorResponses(400, 401, 403, 404, 415, 503) },
      },
    },
    async (request) => updateChannel(request.ctx, request.params.id, request.body),
  )

  app.post(
    '/:id/rotate-token',
    {
      config: { access: { member: 'channels:manage' } },
      schema: {
        tags: ['channels'],
        summary: 'Replace the channel token; the old one stops working at once',
        params: IdParams,
        body: NoBody,
        response: { 200: Channel, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => rotateChannelToken(request.ctx, request.params.id),
  )

  app.post(
    '/:id/email/check',
    {
      config: { access: { member: 'channels:manage' } },
      schema: {
        tags: ['channels'],
        summary: "Log in to an e-mail channel's IMAP and SMTP servers (answers within 15 s)",
        params: IdParams,
        body: NoBody,
        response: { 200: EmailCheckResult, ...errorResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request) => checkEmailChannel(request.ctx, request.params.id),
  )
}
export default routes
