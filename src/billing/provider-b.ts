import type { Config } from '../config.js'
import type { Log } from '../logger.js'
import { InvalidAmountError, normaliseCurrency, toMinorUnits } from './money.js'
import type { LedgerEntry, Operation } from './operations.js'
import { invalidPayload } from '../errors.js'
import type { MappedEvent } from './webhooks.js'

/**
 * Provider B: events are verified by the provider's own API (OAuth2 client-credentials token,
 * then verify-webhook-signature with the body exactly as received), and PayPal-shaped bodies
 * `{ id, event_type, create_time, resource_type, resource }`.
 */

export interface ProviderBOptions {
  apiBase: string
  clientId: string
  clientSecret: string
  webhookId: string
  timeoutMs: number
}

export interface TransmissionHeaders {
  auth_algo: string
  cert_url: string
  transmission_id: string
  transmission_sig: string
  transmission_time: string
}

/** The verification service could not give an answer (timeout, network, 5xx, refused token): 503. */
export class VerificationUnavailable extends Error {}

const HEADER_FIELDS: [keyof TransmissionHeaders, string][] = [
  ['auth_algo', 'auth-algo'],
  ['cert_url', 'cert-url'],
  ['transmission_id', 'transmission-id'],
  ['transmission_sig', 'transmission-sig'],
  ['transmission_time', 'transmission-time'],
]

/** The five transmission headers, or null when one is missing (a 400 without calling the provider). */
export function readTransmissionHeaders(headers: Record<string, string | string[] | undefined>, prefix: string): TransmissionHeaders | null {
  const out: Partial<TransmissionHeaders> = {}
  for (const [field, name] of HEADER_FIELDS) {
    const v = headers[`${prefix}${name}`.toLowerCase()]
    if (typeof v !== 'string' || v === '' || v.length > 4096) return null
    out[field] = v
  }
  return out as TransmissionHeaders
}

/** The process's verifier (it caches the OAuth token), or null when provider B is not configured. */
export function createProviderBVerifier(config: Config, log: Log): ProviderBVerifier | null {
  const { PROVIDER_B_API_BASE: apiBase, PROVIDER_B_CLIENT_ID: clientId, PROVIDER_B_CLIENT_SECRET: clientSecret, PROVIDER_B_WEBHOOK_ID: webhookId } = config
  if (!apiBase || !clientId || !clientSecret || !webhookId) return null
  return new ProviderBVerifier({ apiBase, clientId, clientSecret, webhookId, timeoutMs: config.PROVIDER_B_TIMEOUT_MS }, log.child({ provider: 'provider-b' }))
}

export class ProviderBVerifier {
  private readonly base: string
  private token: { value: string; refreshAt: number } | null = null
  private pending: Promise<string> | null = null

  constructor(
    private readonly opts: ProviderBOptions,
    private readonly log: Log,
  ) {
    this.base = opts.apiBase.replace(/\/+$/, '')
  }

  /** true: SUCCESS; false: the provider says the signature is not valid. Throws VerificationUnavailable. */
  async verify(headers: TransmissionHeaders, rawBody: Buffer): Promise<boolean> {
    // The event is spliced in as the bytes received: re-serialising parsed JSON would turn
    // `1.0` into `1`, reorder nothing but still change bytes, and break the provider's check.
    const prefix = JSON.stringify({ ...headers, webhook_id: this.opts.webhookId }).slice(0, -1)
    const body = Buffer.concat([Buffer.from(`${prefix},"webhook_event":`), rawBody, Buffer.from('}')])
    let res = await this.callVerify(await this.accessToken(), body)
    if (res.status === 401) {
      // Revoked or expired before its announced expiry: one retry with a fresh token.
      this.token = null
      res = await this.callVerify(await this.accessToken(), body)
    }
    if (res.status === 401 || res.status === 429 || res.status >= 500) {
      if (res.status === 401) this.token = null
      throw new VerificationUnavailable(`verification answered HTTP ${res.status}`)
    }
    if (res.status >= 400) {
      // The provider refused the request itself (malformed transmission fields): the sender's fault.
      this.log.warn({ status: res.status }, 'provider-b verification request refused')
      return false
    }
    const status = (res.json as { verification_status?: unknown } | null)?.verification_status
    if (status === 'SUCCESS') return true
    if (status === 'FAILURE') return false
    throw new VerificationUnavailable('verification answer has no verification_status')
  }

  private async callVerify(token: string, body: Buffer): Promise<{ status: number; json: unknown }> {
    try {
      const res = await fetch(`${this.base}/v1/notifications/verify-webhook-signature`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' },
        body: new Uint8Array(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      })
      const text = await res.text()
      let json: unknown = null
      try {
        json = JSON.parse(text)
      } catch {
        json = null
      }
      return { status: res.status, json }
    } catch (err) {
      throw new VerificationUnavailable(`verification request failed: ${describeFetchError(err)}`)
    }
  }

  /** The cached token, or one fetch shared by every request waiting for it. */
  private accessToken(): Promise<string> {
    if (this.token && Date.now() < this.token.refreshAt) return Promise.resolve(this.token.value)
    if (!this.pending) {
      this.pending = this.fetchToken().finally(() => {
        this.pending = null
      })
    }
    return this.pending
  }

  private async fetchToken(): Promise<string> {
    this.token = null
    const basic = Buffer.from(`${this.opts.clientId}:${this.opts.clientSecret}`).toString('base64')
    let res: Response
    let json: { access_token?: unknown; expires_in?: unknown } | null = null
    try {
      res = await fetch(`${this.base}/v1/oauth2/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: 'grant_type=client_credentials',
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      })
      const text = await res.text()
      try {
        json = JSON.parse(text)
      } catch {
        json = null
      }
    } catch (err) {
      throw new VerificationUnavailable(`token request failed: ${describeFetchError(err)}`)
    }
    if (!res.ok) throw new VerificationUnavailable(`token request answered HTTP ${res.status}`)
    const value = json?.access_token
    if (typeof value !== 'string' || value === '') throw new VerificationUnavailable('token answer has no access_token')
    const expiresIn = typeof json?.expires_in === 'number' && json.expires_in > 0 ? json.expires_in : 0
    // Refresh a little early (10% of the lifetime, at most a minute) so a token never expires
    // between our check and the provider's.
    const margin = Math.min(60, expiresIn * 0.1)
    if (expiresIn > 0) this.token = { value, refreshAt: Date.now() + (expiresIn - margin) * 1000 }
    return value
  }
}

/** Never the URL's credentials or the request: only what kind of failure it was. */
function describeFetchError(err: unknown): string {
  const e = err as { name?: string; cause?: { code?: string } }
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'timeout'
  return e?.cause?.code ?? e?.name ?? 'network error'
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)
const get = (o: unknown, ...path: string[]): unknown => path.reduce<unknown>((cur, k) => (isObj(cur) ? cur[k] : undefined), o)

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})$/
/** The provider's ISO time as text (Postgres keeps its microseconds), if it is one. */
const isoTime = (v: unknown): string | null => (typeof v === 'string' && ISO.test(v) && !Number.isNaN(Date.parse(v)) ? v : null)

export const HANDLED = new Set([
  'BILLING.SUBSCRIPTION.ACTIVATED',
  'PAYMENT.SALE.COMPLETED',
  'PAYMENT.CAPTURE.COMPLETED',
  'BILLING.SUBSCRIPTION.PAYMENT.FAILED',
  'PAYMENT.CAPTURE.DENIED',
  'BILLING.SUBSCRIPTION.CANCELLED',
  'PAYMENT.CAPTURE.REFUNDED',
  'PAYMENT.SALE.REFUNDED',
])

/** Sales carry `{ total, currency }`, captures and refunds `{ value, currency_code }`. */
function money(amount: unknown, where: string): { amount: number; currency: string } {
  try {
    const currency = normaliseCurrency(get(amount, 'currency_code') ?? get(amount, 'currency'))
    const value = get(amount, 'value') ?? get(amount, 'total')
    // Sale refunds may be written as negative totals; the ledger's kind says it is a refund.
    return { amount: Math.abs(toMinorUnits(value, currency)), currency }
  } catch (err) {
    if (err instanceof InvalidAmountError) throw invalidPayload(`${where}: ${err.message}`)
    throw err
  }
}

function entry(resource: Obj, amount: unknown, objectId?: string | null): LedgerEntry {
  const id = objectId ?? str(resource.id)
  if (!id) throw invalidPayload('resource has no id')
  return { objectId: id, ...money(amount, 'resource.amount') }
}

function operationsFor(type: string, r: Obj, eventId: string): Operation[] {
  switch (type) {
    case 'BILLING.SUBSCRIPTION.ACTIVATED':
      return [{
        op: 'activate',
        status: 'active',
        details: { plan: str(r.plan_id), currentPeriodEnd: isoTime(get(r, 'billing_info', 'next_billing_time')), subscriptionId: str(r.id) },
      }]
    case 'PAYMENT.SALE.COMPLETED':
    case 'PAYMENT.CAPTURE.COMPLETED':
      return [{ op: 'paymentCompleted', entry: entry(r, r.amount) }]
    case 'BILLING.SUBSCRIPTION.PAYMENT.FAILED': {
      // The resource is the subscription; the failed payment has no id of its own, so it is
      // named by subscription and failure time (the event id when the time is missing).
      const failed = get(r, 'billing_info', 'last_failed_payment')
      const amount = get(failed, 'amount') ?? get(r, 'billing_info', 'outstanding_balance')
      const when = isoTime(get(failed, 'time'))
      const objectId = `${str(r.id) ?? 'subscription'}:${when ?? eventId}`
      return [{ op: 'paymentFailed', entry: amount === undefined ? null : entry(r, amount, objectId) }]
    }
    case 'PAYMENT.CAPTURE.DENIED':
      return [{ op: 'paymentFailed', entry: entry(r, r.amount) }]
    case 'BILLING.SUBSCRIPTION.CANCELLED':
      return [{ op: 'cancel', details: { subscriptionId: str(r.id) } }]
    case 'PAYMENT.CAPTURE.REFUNDED':
    case 'PAYMENT.SALE.REFUNDED':
      return [{ op: 'refund', entries: [entry(r, r.amount)] }]
    default:
      return []
  }
}

/** Maps a verified provider B body to Parley's operations; a malformed handled event is a 400. */
export function mapEvent(body: unknown): MappedEvent {
  if (!isObj(body)) throw invalidPayload('body must be a JSON object')
  const eventId = str(body.id)
  const type = str(body.event_type)
  if (!eventId || eventId.length > 255) throw invalidPayload("field 'id' must be a string of 1..255 chars")
  if (!type || type.length > 255) throw invalidPayload("field 'event_type' must be a string of 1..255 chars")
  const occurredAt = isoTime(body.create_time)
  const resource = body.resource
  const workspaceRef = str(get(resource, 'custom_id'))
  if (!HANDLED.has(type)) return { eventId, type, occurredAt, workspaceRef, operations: null }
  if (!isObj(resource)) throw invalidPayload("field 'resource' must be an object")
  if (!occurredAt) throw invalidPayload("field 'create_time' must be an ISO 8601 time")
  return { eventId, type, occurredAt, workspaceRef, operations: operationsFor(type, resource, eventId) }
}
