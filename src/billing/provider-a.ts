import { createHmac, timingSafeEqual } from 'node:crypto'
import { integerMinorUnits, InvalidAmountError, normaliseCurrency } from './money.js'
import type { LedgerEntry, Operation, SubscriptionDetails, SubscriptionStatus } from './operations.js'
import { invalidPayload } from '../errors.js'
import type { MappedEvent } from './webhooks.js'

/**
 * Provider A: HMAC-SHA256 signatures over `<t>.<raw body>` in the header
 * `t=<unix seconds>,v1=<hex>[,v1=<hex>...]`, and Stripe-shaped events
 * `{ id, type, created, data: { object } }`.
 */

export function parseSecrets(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter(Boolean)
}

export type SignatureCheck = { ok: true } | { ok: false; reason: string }

/**
 * Any configured secret matching any v1 signature passes (rotation: old and new secrets side by
 * side). Other schemes (v0) are ignored. The timestamp must lie within the tolerance in either
 * direction: a stale one is a replay, a far-future one would stay replayable for longer.
 */
export function verifySignature(
  header: string | string[] | undefined,
  rawBody: Buffer,
  secrets: string[],
  toleranceS: number,
  nowS = Math.floor(Date.now() / 1000),
): SignatureCheck {
  if (header === undefined || header === '') return { ok: false, reason: 'missing signature header' }
  const text = Array.isArray(header) ? header.join(',') : header
  let t: string | undefined
  const v1: Buffer[] = []
  for (const part of text.split(',')) {
    const eq = part.indexOf('=')
    if (eq < 0) continue
    const key = part.slice(0, eq).trim()
    const value = part.slice(eq + 1).trim()
    if (key === 't') {
      if (t !== undefined) return { ok: false, reason: 'several timestamps' }
      t = value
    } else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) {
      v1.push(Buffer.from(value, 'hex'))
    }
  }
  if (t === undefined || !/^\d{1,12}$/.test(t)) return { ok: false, reason: 'no valid timestamp' }
  if (v1.length === 0) return { ok: false, reason: 'no v1 signature' }
  if (Math.abs(nowS - Number(t)) > toleranceS) return { ok: false, reason: 'timestamp outside tolerance' }
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest()
    for (const sig of v1) if (timingSafeEqual(expected, sig)) return { ok: true }
  }
  return { ok: false, reason: 'no signature matches' }
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null)
const get = (o: unknown, ...path: (string | number)[]): unknown => {
  let cur = o
  for (const k of path) {
    if (typeof k === 'number') cur = Array.isArray(cur) ? cur[k] : undefined
    else cur = isObj(cur) ? cur[k] : undefined
  }
  return cur
}
const unixToIso = (v: unknown): string | null =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v < 253402300800 ? new Date(v * 1000).toISOString() : null
const idOf = (v: unknown): string | null => str(v) ?? str(get(v, 'id'))

/** Stripe-style subscription statuses; the ones not listed (incomplete, paused) change nothing. */
const STATUS: Record<string, SubscriptionStatus> = {
  active: 'active',
  trialing: 'active',
  past_due: 'past_due',
  unpaid: 'past_due',
  canceled: 'canceled',
  incomplete_expired: 'canceled',
}

/** The workspace: metadata.workspaceId, client_reference_id, or (invoices) the subscription's metadata. */
function workspaceRefOf(o: Obj): string | null {
  return (
    str(get(o, 'metadata', 'workspaceId')) ??
    str(o.client_reference_id) ??
    str(get(o, 'subscription_details', 'metadata', 'workspaceId')) ??
    str(get(o, 'parent', 'subscription_details', 'metadata', 'workspaceId'))
  )
}

function entry(objectId: unknown, amount: unknown, currency: unknown, created?: unknown): LedgerEntry {
  const id = str(objectId)
  if (!id) throw invalidPayload('data.object has no id')
  try {
    return { objectId: id, amount: Math.abs(integerMinorUnits(amount)), currency: normaliseCurrency(currency), occurredAt: unixToIso(created) ?? undefined }
  } catch (err) {
    if (err instanceof InvalidAmountError) throw invalidPayload(`data.object: ${err.message}`)
    throw err
  }
}

function subscriptionDetails(o: Obj): SubscriptionDetails {
  return {
    plan:
      str(get(o, 'metadata', 'plan')) ??
      str(get(o, 'items', 'data', 0, 'price', 'lookup_key')) ??
      str(get(o, 'items', 'data', 0, 'price', 'id')) ??
      str(get(o, 'plan', 'id')),
    currentPeriodEnd: unixToIso(o.current_period_end) ?? unixToIso(get(o, 'items', 'data', 0, 'current_period_end')),
    subscriptionId: str(o.id),
  }
}

export const HANDLED = new Set([
  'checkout.session.completed',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'invoice.paid',
  'invoice.payment_succeeded',
  'invoice.payment_failed',
  'charge.refunded',
  'refund.created',
])

const skipRefund = (r: unknown) => ['failed', 'canceled'].includes(String(get(r, 'status')))

function operationsFor(type: string, o: Obj): Operation[] | null {
  switch (type) {
    case 'checkout.session.completed':
      // An asynchronous payment method may complete the session unpaid: the later
      // subscription / invoice events carry the outcome.
      if (o.payment_status === 'unpaid') return []
      return [{ op: 'activate', status: 'active', details: { plan: str(get(o, 'metadata', 'plan')), subscriptionId: idOf(o.subscription) } }]
    case 'customer.subscription.created':
    case 'customer.subscription.updated': {
      const status = STATUS[String(o.status)]
      return status ? [{ op: 'activate', status, details: subscriptionDetails(o) }] : []
    }
    case 'customer.subscription.deleted':
      return [{ op: 'cancel', details: { subscriptionId: str(o.id) } }]
    case 'invoice.paid':
    case 'invoice.payment_succeeded':
      return [{ op: 'paymentCompleted', entry: entry(o.id, o.amount_paid, o.currency) }]
    case 'invoice.payment_failed':
      return [{ op: 'paymentFailed', entry: entry(o.id, o.amount_due, o.currency) }]
    case 'charge.refunded': {
      // One row per refund object, so refund.created for the same refund does not count twice.
      // Newer API versions do not embed the refunds: refund.created then carries them.
      const list = get(o, 'refunds', 'data')
      const refunds = Array.isArray(list) ? list.filter((r) => !skipRefund(r)) : []
      return [{ op: 'refund', entries: refunds.map((r) => entry(get(r, 'id'), get(r, 'amount'), get(r, 'currency') ?? o.currency, get(r, 'created'))) }]
    }
    case 'refund.created':
      return [{ op: 'refund', entries: skipRefund(o) ? [] : [entry(o.id, o.amount, o.currency, o.created)] }]
    default:
      return null
  }
}

/** Maps a verified provider A body to Parley's operations; a malformed handled event is a 400. */
export function mapEvent(body: unknown): MappedEvent {
  if (!isObj(body)) throw invalidPayload('body must be a JSON object')
  const eventId = str(body.id)
  const type = str(body.type)
  if (!eventId || eventId.length > 255) throw invalidPayload("field 'id' must be a string of 1..255 chars")
  if (!type || type.length > 255) throw invalidPayload("field 'type' must be a string of 1..255 chars")
  const occurredAt = unixToIso(body.created)
  const object = get(body, 'data', 'object')
  if (!HANDLED.has(type)) return { eventId, type, occurredAt, workspaceRef: isObj(object) ? workspaceRefOf(object) : null, operations: null }
  if (!isObj(object)) throw invalidPayload("field 'data.object' must be an object")
  if (!occurredAt) throw invalidPayload("field 'created' must be unix seconds")
  return { eventId, type, occurredAt, workspaceRef: workspaceRefOf(object), operations: operationsFor(type, object) ?? [] }
}
