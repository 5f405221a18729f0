import type { PaymentView, SubscriptionView } from '../../schemas/billing.js'
import { memberOf, type Ctx } from '../context.js'
import { keysetPage, type Page } from '../cursor.js'
import { iso } from '../time.js'


export async function getSubscription(ctx: Ctx): Promise<SubscriptionView> {
  const { workspaceId } = memberOf(ctx)
  const [row] = await ctx.sql<{ status: SubscriptionView['status']; provider: string | null; plan: string | null; currentPeriodEnd: string | null; updatedAt: string }[]>`
    SELECT status, provider, plan, current_period_end AS "currentPeriodEnd", updated_at AS "updatedAt"
    FROM subscriptions WHERE workspace_id = ${workspaceId}`
  if (!row) return { status: 'none', provider: null, plan: null, currentPeriodEnd: null, updatedAt: null }
  return {
    status: row.status,
    provider: row.provider,
    plan: row.plan,
    currentPeriodEnd: iso(row.currentPeriodEnd),
    updatedAt: iso(row.updatedAt),
  }
}


const LIST = 'billing.payments'

/**
 * The ledger, newest first: keyset on (occurred_at, id) descending, served by
 * payments_workspace_idx (workspace_id, occurred_at, id) read backwards. The cursor keeps the
 * timestamp as Postgres text, so microseconds survive between pages.
 */
export async function listPayments(ctx: Ctx, { limit, cursor }: { limit: number; cursor?: string }): Promise<Page<PaymentView>> {
  const { sql } = ctx
  const { workspaceId } = memberOf(ctx)
  const page = await keysetPage(ctx, {
    cursor,
    params: { list: LIST, workspaceId },
    key: ['timestamp', 'uuid'],
    limit,
    fetch: (after, take) => sql<{ id: string; provider: PaymentView['provider']; kind: PaymentView['kind']; amount: string; currency: string; providerObjectId: string; occurredAt: string }[]>`
      SELECT id, provider, kind, amount, currency, provider_object_id AS "providerObjectId", occurred_at AS "occurredAt"
      FROM payments
      WHERE workspace_id = ${workspaceId}
        ${after ? sql`AND (occurred_at, id) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
      ORDER BY occurred_at DESC, id DESC
      LIMIT ${take}`,
    keyOf: (p) => [p.occurredAt, p.id],
  })
  return {
    data: page.data.map((r) => ({
      id: r.id,
      provider: r.provider,
      kind: r.kind,
      amount: Number(r.amount),
      currency: r.currency,
      providerObjectId: r.providerObjectId,
      occurredAt: iso(r.occurredAt),
    })),
    nextCursor: page.nextCursor,
  }
}
