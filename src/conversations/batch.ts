import type { ConversationView } from '../../schemas/conversations.js'
import type { Transaction } from '../db/client.js'
import type { SlaBreach, SlaChange } from '../sla/sync.js'
import type { CountersDelta } from './counters.js'
import type { LockedConversation } from './lifecycle.js'
import type { MembersRooms } from './visibility.js'

/**
 * Many conversations' changes in one transaction: a bulk request (API.md section 17,
 * docs/triage.md "Bulk"), or a mailbox's batch of inbound mails (importBatch, src/email/inbound.ts;
 * docs/email.md "Inbound throughput"). Each change still goes through the domain function its single route
 * calls and through mutateConversation (src/conversations/lifecycle.ts), which, given a context
 * holding a batch, runs it in the batch's transaction instead of a transaction of its own: its
 * counter delta and its analytics rollups are added to the batch's, and what it does after commit
 * (conversation:updated, routing signals) waits for the batch's commit, in order.
 *
 * What is shared by every conversation of a workspace (the unread counter rows, the rollup rows)
 * is written once, just before the commit, in one statement each, rows in key order: so the
 * batch holds those rows for a moment, not for its whole length, and two batches (or a batch and
 * single requests) lock them in the same order. The conversation rows themselves are locked at
 * the start, in id order, for the same reason, and read there once: a change uses that read
 * instead of its own lookup. The views its events carry are read together, before the commit
 * (at once, before a second change of the same conversation), and so is the SLA step that follows
 * every change (status log, policy matching, targets, breaches: a fixed number of set-based
 * statements for all of them, src/sla/sync.ts, just before the views). Round trips per
 * conversation are then the change's own statements only (inOneTransaction,
 * src/conversations/lifecycle.ts).
 *
 * No savepoints: a conversation the caller may not see fails at its lookup, before anything is
 * written, and the batch goes on (its row answers 404); any other failure inside a change (which
 * may have written) aborts the whole transaction (BatchAborted), and the caller applies each
 * conversation in a transaction of its own instead. Why: a savepoint per conversation is a
 * subtransaction each; past 64 in one transaction PostgreSQL's snapshots of every other session
 * overflow to pg_subtrans lookups, and postgres.js names each one differently (a statement
 * prepared per name) and never releases them: 100 of them cost more than the changes themselves.
 */
export interface ConversationBatch {
  readonly tx: Transaction
  readonly workspaceId: string
  /** The rows locked at the start, as mutateConversation reads them, until their first change. */
  readonly locked: Map<string, LockedConversation>
  /**
   * Changes whose SLA step (src/sla/sync.ts, slaAfterChanges) is still to run, all at once before
   * the views are read; the breaches it records go to `breaches`, the change's own list.
   */
  readonly sla: (SlaChange & { breaches: SlaBreach[] })[]
  /** Changes whose view (for their conversation:updated) is still to be read, all in one statement. */
  readonly pending: PendingView[]
  /** The sum of the counter deltas of the changes made so far. */
  readonly counters: CountersDelta
  /** Each change's after-commit work, in order. */
  readonly after: (() => Promise<void>)[]
  /**
   * Who may see a conversation, for its events after the commit: read once per team for the whole
   * batch (the rooms of members-only events depend on the workspace and the team alone), not two
   * statements per conversation.
   */
  readonly membersRooms: MembersRooms
}

/** A change's view after it: undefined until read. */
export interface PendingView {
  row: { id: string }
  conversation?: ConversationView | null
}

/** A change failed inside a batch after it may have written: the batch's transaction must not commit. */
export class BatchAborted extends Error {
  constructor(readonly reason: unknown) {
    super('a change failed inside a batch of conversation changes')
  }
}

/** Adds a change's counter delta to the batch's. */
export function addToBatch(batch: ConversationBatch, delta: CountersDelta): void {
  for (const [scope, d] of delta) {
    const sum = batch.counters.get(scope) ?? { conversations: 0, messages: 0 }
    sum.conversations += d.conversations
    sum.messages += d.messages
    if (sum.conversations === 0 && sum.messages === 0) batch.counters.delete(scope)
    else batch.counters.set(scope, sum)
  }
}
