import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { WebhookBody, WebhookReceived } from '../../schemas/billing.js'
import { limits } from '../../plugins/rate-limit.js'
import { errorResponses } from '../../schemas/common.js'
import { receiveProviderA, receiveProviderB } from '../../src/billing/webhooks.js'

/** The body exactly as received: this file's parser hands the handlers a Buffer. */
const raw = (body: unknown) => (Buffer.isBuffer(body) ? body : Buffer.alloc(0))

/**
 * /billing/webhooks/<provider>. Signatures are over the exact bytes, so this file's plugin (and
 * only it: autoload gives each route file its own encapsulated scope) reads JSON bodies as raw
 * Buffers.
 */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))

  const schema = (summary: string) => ({
    tags: ['billing'],
    summary,
    body: WebhookBody,
    response: { 200: WebhookReceived, ...errorResponses(400, 413, 415, 429, 500, 503) },
  })

  app.post(
    '/webhooks/provider-a',
    { config: { access: 'public', providerFacing: true, rateLimit: limits.webhookFailures(app.config) }, schema: schema('Provider A webhook (HMAC-SHA256 signature)') },
    async (request) => {
      await receiveProviderA(request.ctx, request.headers, raw(request.body))
      return { received: true as const }
    },
  )

  app.post(
    '/webhooks/provider-b',
    { config: { access: 'public', providerFacing: true, rateLimit: limits.webhookFailures(app.config) }, schema: schema('Provider B webhook (verified through the provider API)') },
    async (request) => {
      await receiveProviderB(request.ctx, request.headers, raw(request.body))
      return { received: true as const }
    },
  )
}
export default routes
