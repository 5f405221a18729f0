import { deferRollups, flushRollups, type RolledEvent } from '../analytics/record.js'
import { memberOf, type Ctx } from '../context.js'
import type { Transaction } from '../db/client.js'
import { isUuid } from '../uuid.js'
import { applyCountersDelta, lockCountersShared, type CountersDelta } from './counters.js'
import { conversationVisibleTo } from './visibility.js'

/**
 * Many conversations' changes in one transaction: a bulk request (API.md section 17,
 * docs/triage.md "Bulk"). Each change still goes through the domain function its single route
 * calls and through mutateConversation (src/conversations/lifecycle.ts), which, given a context
 * holding a batch, runs it in a savepoint of the batch's transaction instead of a transaction of
 * its own: an error undoes that conversation's change only, as a failed single request would.
 * Its counter delta and its analytics rollups are added to the batch's, and what it does after
 * commit (conversation:updated, routing signals) waits for the batch's commit, in order.
 *
 * What is shared by every conversation of a workspace (the unread counter rows, the rollup rows)
 * is written once, just before the commit, in one statement each, rows in key order: so the
 * batch holds those rows for a moment, not for its whole length, and two batches (or a batch and
 * single requests) lock them in the same order. The conversation rows themselves are locked at
 * the start, in id order, for the same reason.
 */
export interface ConversationBatch {
  readonly tx: Transaction
  readonly workspaceId: string
  /** The sum of the counter deltas of the changes made so far. */
  readonly counters: CountersDelta
  /** The analytics events recorded so far, for their rollups. */
  readonly rollups: RolledEvent[]
  /** Each change's after-commit work, in order. */
  readonly after: (() => Promise<void>)[]
}

/**
 * Runs `run` with a context whose conversation changes join one transaction (the caller's
 * workspace); after the commit, each change's after-commit work runs, in order. Throws when the
 * transaction as a whole fails (nothing of it committed): the caller may then apply the changes
 * one by one. Errors of the after-commit work are logged, never thrown: the changes are made.
 */
export async function inOneTransaction<T>(ctx: Ctx, ids: string[], run: (batchCtx: Ctx) => Promise<T>): Promise<T> {
  const { workspaceId } = memberOf(ctx)
  const after: (() => Promise<void>)[] = []
  let result: T | undefined
  await ctx.sql.begin(async (tx) => {
    await lockCountersShared(tx, workspaceId)
    const rows = [...new Set(ids.map((id) => id.toLowerCase()).filter(isUuid))].sort()
    if (rows.length > 0) {
      await tx`
        SELECT 1 FROM conversations WHERE id = ANY(${rows}::uuid[]) AND ${conversationVisibleTo(tx, ctx.caller)}
        ORDER BY id FOR UPDATE`
    }
    const batch: ConversationBatch = { tx, workspaceId, counters: new Map(), rollups: [], after }
    result = await run({ ...ctx, batch })
    // Rollups, then counters: the order of a single change (recorded inside it, counters after).
    await flushRollups(tx, batch.rollups)
    await applyCountersDelta(tx, workspaceId, batch.counters)
  })
  for (const work of after) {
    try {
      await work()
    } catch (err) {
      ctx.log.error({ err }, 'after-commit work of a batched conversation change failed')
    }
  }
  return result!
}

/**
 * Inside a savepoint of `batch`: `change` runs with the savepoint (its analytics rollups kept
 * aside, handed to the batch only if it succeeds).
 */
export async function inSavepoint<R extends { delta: CountersDelta }>(batch: ConversationBatch, change: (sql: Transaction) => Promise<R>): Promise<R> {
  const out = await batch.tx.savepoint(async (sql) => {
    const rollups: RolledEvent[] = []
    deferRollups(sql, rollups)
    return { r: await change(sql), rollups }
  })
  for (const [scope, d] of out.r.delta) {
    const sum = batch.counters.get(scope) ?? { conversations: 0, messages: 0 }
    sum.conversations += d.conversations
    sum.messages += d.messages
    if (sum.conversations === 0 && sum.messages === 0) batch.counters.delete(scope)
    else batch.counters.set(scope, sum)
  }
  batch.rollups.push(...out.rollups)
  return out.r
}
