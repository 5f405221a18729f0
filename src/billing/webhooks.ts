import type { Ctx } from '../context.js'
import type { BillingProvider } from '../db/schema.js'
import { dependencyUnavailable, invalidPayload, invalidSignature, notConfigured } from '../errors.js'
import { isUuid } from '../uuid.js'
import { scanJsonText } from '../validation.js'
import { applyOperation, type Operation } from './operations.js'
import * as providerA from './provider-a.js'
import * as providerB from './provider-b.js'

type Headers = Record<string, string | string[] | undefined>

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
 * POST /billing/webhooks/provider-a: the body as received (`raw`), accepted only with a valid
 * HMAC signature of one of the configured secrets, then processed exactly once.
 */
export async function receiveProviderA(ctx: Ctx, headers: Headers, raw: Buffer): Promise<void> {
  const config = ctx.config
  const secrets = providerA.parseSecrets(config.PROVIDER_A_WEBHOOK_SECRET)
  if (secrets.length === 0) throw notConfigured('Webhooks from provider-a are not configured')
  const check = providerA.verifySignature(headers[config.PROVIDER_A_SIGNATURE_HEADER.toLowerCase()], raw, secrets, config.PROVIDER_A_TOLERANCE_S)
  if (!check.ok) {
    ctx.log.info({ reason: check.reason }, 'provider-a signature refused')
    throw invalidSignature()
  }
  const body = parseJson(raw)
  await processWebhook(ctx, 'provider-a', providerA.mapEvent(body), body)
}

/**
 * POST /billing/webhooks/provider-b: accepted only when provider B's own API says the
 * transmission is authentic (503 when it cannot tell, so the provider retries), then processed
 * exactly once.
 */
export async function receiveProviderB(ctx: Ctx, headers: Headers, raw: Buffer): Promise<void> {
  const verifier = ctx.providerB
  if (!verifier) throw notConfigured('Webhooks from provider-b are not configured')
  const transmission = providerB.readTransmissionHeaders(headers, ctx.config.PROVIDER_B_HEADER_PREFIX)
  if (!transmission) {
    ctx.log.info('provider-b transmission headers missing')
    throw invalidSignature()
  }
  // Only well-formed JSON can be spliced into the verification request.
  const body = parseJson(raw)
  let verified: boolean
  try {
    verified = await verifier.verify(transmission, raw)
  } catch (err) {
    if (err instanceof providerB.VerificationUnavailable) {
      ctx.log.error({ reason: err.message }, 'provider-b verification unavailable')
      throw dependencyUnavailable('Webhook verification service is unavailable; retry later')
    }
    throw err
  }
  if (!verified) {
    ctx.log.info('provider-b signature refused')
    throw invalidSignature()
  }
  await processWebhook(ctx, 'provider-b', providerB.mapEvent(body), body)
}

/** What a provider module makes of a verified event. */
export interface MappedEvent {
  eventId: string
  type: string
  /** ISO time of the event (null only for types that are not handled). */
  occurredAt: string | null
  /** The workspace the event names, as sent (checked against the database). */
  workspaceRef: string | null
  /** null: a type Parley does not handle (recorded and acknowledged). */
  operations: Operation[] | null
}

export type WebhookOutcome = 'processed' | 'ignored' | 'unknown_workspace' | 'duplicate'


/**
 * Errors that mean "the database is not there right now" rather than "this statement is wrong":
 * postgres.js connection errors, connection exceptions (08), resources (53), operator
 * intervention such as an admin shutdown (57), and serialization failures / deadlocks (40).
 */
export function isDependencyError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  if (typeof code !== 'string') return false
  if (/^(CONNECTION_|CONNECT_TIMEOUT|ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN)/.test(code)) return true
  return /^(08|53|57|40)[0-9A-Z]{3}$/.test(code)
}

/**
 * Exactly-once processing. One transaction: claim the event id (INSERT ... ON CONFLICT DO
 * NOTHING RETURNING), then run its operations. A duplicate finds the id taken and changes
 * nothing; a concurrent duplicate waits on the primary key until the first commits (then sees
 * the conflict) or rolls back (then processes it itself). Any error rolls back the claim with
 * the effects, so the provider's retry processes the event; the answer is then 503 (database
 * unavailable) or 500 (anything else), never 200.
 */
export async function processWebhook(ctx: Ctx, provider: BillingProvider, event: MappedEvent, payload: unknown): Promise<WebhookOutcome> {
  const { sql, log } = ctx
  const ref = isUuid(event.workspaceRef) ? event.workspaceRef.toLowerCase() : null
  let outcome: WebhookOutcome
  try {
    outcome = await sql.begin(async (tx) => {
      let result: WebhookOutcome = 'ignored'
      if (event.operations) {
        const found = ref ? await tx`SELECT 1 FROM workspaces WHERE id = ${ref}` : []
        result = found.length ? 'processed' : 'unknown_workspace'
      }
      // Drizzle's postgres-js driver turns off postgres.js' JSON serialiser on the shared pool:
      // the payload goes in as text with a ::jsonb cast.
      const claimed = await tx`
        INSERT INTO webhook_events (provider, event_id, type, workspace_id, outcome, occurred_at, payload)
        VALUES (${provider}, ${event.eventId}, ${event.type}, ${result === 'unknown_workspace' ? null : ref},
                ${result}, ${event.occurredAt}::timestamptz, ${JSON.stringify(payload)}::jsonb)
        ON CONFLICT (provider, event_id) DO NOTHING
        RETURNING 1`
      if (claimed.length === 0) return 'duplicate' as const
      if (result === 'processed' && ref && event.occurredAt) {
        const origin = { provider, eventId: event.eventId, workspaceId: ref, occurredAt: event.occurredAt }
        for (const op of event.operations ?? []) await applyOperation(tx, origin, op)
      }
      return result
    })
  } catch (err) {
    if (isDependencyError(err)) {
      log.error({ err: { message: (err as Error).message, code: (err as { code?: string }).code }, provider, eventId: event.eventId }, 'webhook not stored: database unavailable')
      throw dependencyUnavailable('Billing storage is unavailable; retry later')
    }
    throw err
  }
  const fields = { provider, eventId: event.eventId, type: event.type, outcome }
  if (outcome === 'unknown_workspace') log.warn({ ...fields, workspaceRef: event.workspaceRef?.slice(0, 100) }, 'webhook for an unknown workspace recorded')
  else log.info(fields, `webhook ${outcome}`)
  return outcome
}
