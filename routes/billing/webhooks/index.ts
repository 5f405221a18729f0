import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppError, badRequest } from '../../../src/errors.js'
import * as providerA from '../../../src/billing/provider-a.js'
import * as providerB from '../../../src/billing/provider-b.js'
import { dependencyUnavailable, invalidPayload, processWebhook } from '../../../src/billing/webhooks.js'
import { errorResponses } from '../../../schemas/common.js'
import { scanJsonText } from '../../../src/validation.js'
import { WebhookReceived } from '../../../schemas/billing.js'

const notConfigured = (provider: string) => new AppError(503, 'NOT_CONFIGURED', `Webhooks from ${provider} are not configured`)
const invalidSignature = () => badRequest('Webhook signature verification failed', 'INVALID_SIGNATURE')

function parseJson(raw: Buffer): unknown {
  const text = raw.toString('utf8')
  // Bounded before JSON.parse, like every JSON body (provider B parses before verification).
  const { refusal } = scanJsonText(text)
  if (refusal) throw invalidPayload(refusal)
  try {
    return JSON.parse(text)
  } catch {
    throw invalidPayload('Body is not valid JSON')
  }
}

/**
 * Signatures are over the exact bytes, so this plugin (and only this plugin: autoload gives
 * each route file its own encapsulated scope) reads JSON bodies as raw Buffers.
 */
const routes: FastifyPluginAsyncTypebox = async (app) => {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))

  const cfg = app.config
  const secretsA = providerA.parseSecrets(cfg.PROVIDER_A_WEBHOOK_SECRET)
  const headerA = cfg.PROVIDER_A_SIGNATURE_HEADER.toLowerCase()
  // One verifier per app: it holds the cached OAuth token.
  const verifierB =
    cfg.PROVIDER_B_API_BASE && cfg.PROVIDER_B_CLIENT_ID && cfg.PROVIDER_B_CLIENT_SECRET && cfg.PROVIDER_B_WEBHOOK_ID
      ? new providerB.ProviderBVerifier(
          {
            apiBase: cfg.PROVIDER_B_API_BASE,
            clientId: cfg.PROVIDER_B_CLIENT_ID,
            clientSecret: cfg.PROVIDER_B_CLIENT_SECRET,
            webhookId: cfg.PROVIDER_B_WEBHOOK_ID,
            timeoutMs: cfg.PROVIDER_B_TIMEOUT_MS,
          },
          app.log.child({ provider: 'provider-b' }),
        )
      : null

  const schema = (summary: string) => ({
    tags: ['billing'],
    summary,
    response: { 200: WebhookReceived, ...errorResponses(400, 413, 415, 500, 503) },
  })

  app.post(
    '/provider-a',
    { config: { access: 'public', providerFacing: true }, schema: schema('Provider A webhook (HMAC-SHA256 signature)') },
    async (request) => {
      if (secretsA.length === 0) throw notConfigured('provider-a')
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
      const check = providerA.verifySignature(request.headers[headerA], raw, secretsA, cfg.PROVIDER_A_TOLERANCE_S)
      if (!check.ok) {
        request.log.info({ reason: check.reason }, 'provider-a signature refused')
        throw invalidSignature()
      }
      const body = parseJson(raw)
      await processWebhook(app.sql, request.log, 'provider-a', providerA.mapEvent(body), body)
      return { received: true as const }
    },
  )

  app.post(
    '/provider-b',
    { config: { access: 'public', providerFacing: true }, schema: schema('Provider B webhook (verified through the provider API)') },
    async (request) => {
      if (!verifierB) throw notConfigured('provider-b')
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
      const headers = providerB.readTransmissionHeaders(request.headers, cfg.PROVIDER_B_HEADER_PREFIX)
      if (!headers) {
        request.log.info('provider-b transmission headers missing')
        throw invalidSignature()
      }
      // Only well-formed JSON can be spliced into the verification request.
      const body = parseJson(raw)
      let verified: boolean
      try {
        verified = await verifierB.verify(headers, raw)
      } catch (err) {
        if (err instanceof providerB.VerificationUnavailable) {
          request.log.error({ reason: err.message }, 'provider-b verification unavailable')
          throw dependencyUnavailable('Webhook verification service is unavailable; retry later')
        }
        throw err
      }
      if (!verified) {
        request.log.info('provider-b signature refused')
        throw invalidSignature()
      }
      await processWebhook(app.sql, request.log, 'provider-b', providerB.mapEvent(body), body)
      return { received: true as const }
    },
  )
}
export default routes
