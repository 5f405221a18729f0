import { randomUUID } from 'node:crypto'
import type { Sql } from '../db/client.js'
import type { BillingProvider } from '../db/schema.js'

/**
 * The common billing operations both providers' events map to. Each runs inside the webhook's
 * transaction (src/billing/webhooks.ts), so the event id and its effects commit together.
 */
export type SubscriptionStatus = 'active' | 'past_due' | 'canceled'

export interface LedgerEntry {
  /** The provider's id of the invoice / sale / capture / refund: one ledger row per object and kind. */
  objectId: string
  /** Integer minor units, positive. */
  amount: number
  /** Upper-case ISO 4217. */
  currency: string
  /** ISO timestamp of the object itself when it carries one; else the event's time. */
  occurredAt?: string
}

export interface SubscriptionDetails {
  plan?: string | null
  currentPeriodEnd?: string | null
  subscriptionId?: string | null
}

export type Operation =
  | { op: 'activate'; status: SubscriptionStatus; details: SubscriptionDetails }
  | { op: 'paymentCompleted'; entry: LedgerEntry | null }
  | { op: 'paymentFailed'; entry: LedgerEntry | null }
  | { op: 'cancel'; details: SubscriptionDetails }
  | { op: 'refund'; entries: LedgerEntry[] }

/** Where a billing change comes from: the provider's event, its workspace and its time. */
export interface EventOrigin {
  provider: BillingProvider
  eventId: string
  workspaceId: string
  /** The event's own time (ISO): orders subscription changes, dates ledger rows. */
  occurredAt: string
}

/**
 * Last writer wins by event time, whatever the arrival order. Equal times (provider A's
 * `created` has one-second resolution) are broken by this rank, so the outcome of a set of
 * events never depends on the order they arrive in.
 */
const RANK_SQL = (col: string) => `CASE ${col} WHEN 'canceled' THEN 3 WHEN 'past_due' THEN 2 WHEN 'active' THEN 1 ELSE 0 END`
/** Plan, period end and subscription id kept from the previous event of the same provider when this one does not carry them. */
const KEEP_SQL = (col: string) => `CASE WHEN EXCLUDED.${col} IS NOT NULL THEN EXCLUDED.${col}
  WHEN EXCLUDED.provider IS DISTINCT FROM subscriptions.provider THEN NULL
  ELSE subscriptions.${col} END`

export async function setSubscriptionStatus(
  sql: Sql,
  origin: EventOrigin,
  status: SubscriptionStatus,
  details: SubscriptionDetails = {},
): Promise<boolean> {
  // KEEP_SQL and RANK_SQL are fixed text of this module (column names), never input.
  const keep = (col: string) => sql.unsafe(KEEP_SQL(col))
  const rank = (col: string) => sql.unsafe(RANK_SQL(col))
  const rows = await sql`
    INSERT INTO subscriptions
      (workspace_id, status, provider, plan, provider_subscription_id, current_period_end, last_event_at, updated_at)
    VALUES (${origin.workspaceId}, ${status}, ${origin.provider}, ${details.plan ?? null}, ${details.subscriptionId ?? null},
            ${details.currentPeriodEnd ?? null}::timestamptz, ${origin.occurredAt}::timestamptz, now())
    ON CONFLICT (workspace_id) DO UPDATE SET
      status = EXCLUDED.status,
      provider = EXCLUDED.provider,
      plan = ${keep('plan')},
      provider_subscription_id = ${keep('provider_subscription_id')},
      current_period_end = ${keep('current_period_end')},
      last_event_at = EXCLUDED.last_event_at,
      updated_at = now()
    WHERE subscriptions.last_event_at IS NULL
       OR subscriptions.last_event_at < EXCLUDED.last_event_at
       OR (subscriptions.last_event_at = EXCLUDED.last_event_at AND ${rank('EXCLUDED.status')} >= ${rank('subscriptions.status')})
    RETURNING 1`
  if (rows.length > 0) return true
  // An older event does not set the status, but what it knows (the plan, the period end) still
  // fills fields that are empty: a payment that overtook the activation must not lose the plan.
  if (details.plan || details.currentPeriodEnd || details.subscriptionId) {
    await sql`
      UPDATE subscriptions SET
        plan = COALESCE(plan, ${details.plan ?? null}),
        current_period_end = COALESCE(current_period_end, ${details.currentPeriodEnd ?? null}::timestamptz),
        provider_subscription_id = COALESCE(provider_subscription_id, ${details.subscriptionId ?? null})
      WHERE workspace_id = ${origin.workspaceId} AND provider = ${origin.provider}`
  }
  return false
}

export async function recordLedger(sql: Sql, origin: EventOrigin, kind: 'payment' | 'refund' | 'failure', entry: LedgerEntry): Promise<boolean> {
  const rows = await sql`
    INSERT INTO payments (id, workspace_id, provider, kind, amount, currency, provider_object_id, event_id, occurred_at)
    VALUES (${randomUUID()}, ${origin.workspaceId}, ${origin.provider}, ${kind}, ${entry.amount}, ${entry.currency},
            ${entry.objectId}, ${origin.eventId}, ${entry.occurredAt ?? origin.occurredAt}::timestamptz)
    ON CONFLICT (provider, kind, provider_object_id) DO NOTHING
    RETURNING 1`
  return rows.length > 0
}

/** Subscription state from an activation-type event (its own status: active, past_due or canceled). */
export const activate = (sql: Sql, origin: EventOrigin, status: SubscriptionStatus, details: SubscriptionDetails) =>
  setSubscriptionStatus(sql, origin, status, details)

/** A payment: one ledger row per provider object; the subscription is active again. */
export async function paymentCompleted(sql: Sql, origin: EventOrigin, entry: LedgerEntry | null) {
  if (entry) await recordLedger(sql, origin, 'payment', entry)
  await setSubscriptionStatus(sql, origin, 'active')
}

/** A failed payment: one failure row per provider object; the subscription is past_due. */
export async function paymentFailed(sql: Sql, origin: EventOrigin, entry: LedgerEntry | null) {
  if (entry) await recordLedger(sql, origin, 'failure', entry)
  await setSubscriptionStatus(sql, origin, 'past_due')
}

export const cancel = (sql: Sql, origin: EventOrigin, details: SubscriptionDetails) =>
  setSubscriptionStatus(sql, origin, 'canceled', details)

/** Refunds go to the ledger only: one row per refund object; the subscription is untouched. */
export async function refund(sql: Sql, origin: EventOrigin, entries: LedgerEntry[]) {
  for (const entry of entries) await recordLedger(sql, origin, 'refund', entry)
}

export async function applyOperation(sql: Sql, origin: EventOrigin, op: Operation): Promise<void> {
  switch (op.op) {
    case 'activate':
      await activate(sql, origin, op.status, op.details)
      return
    case 'paymentCompleted':
      return paymentCompleted(sql, origin, op.entry)
    case 'paymentFailed':
      return paymentFailed(sql, origin, op.entry)
    case 'cancel':
      await cancel(sql, origin, op.details)
      return
    case 'refund':
      return refund(sql, origin, op.entries)
  }
}
