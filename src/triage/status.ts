import { v7 as uuidv7 } from 'uuid'
import type { MessageView } from '../../schemas/conversations.js'
import { recordReopened } from '../analytics/record.js'
import type { Ctx } from '../context.js'
import type { ConversationPriority } from '../db/schema.js'
import { conversationNotFound, invalidSnooze } from '../errors.js'
import { rooms } from '../events.js'
import type { CounterState } from '../conversations/counters.js'
import { COUNTER_RETURNING, isClosedStatus, mutateConversation, updateRow } from '../conversations/lifecycle.js'
import { MESSAGE_COLUMNS, toMessageView, type MessageRecord } from '../conversations/view.js'

/**
 * Priority, PENDING and SNOOZED (API.md section 17, docs/triage.md). Every change goes through
 * mutateConversation: the row lock, the counter delta (PENDING and SNOOZED are not OPEN, so they
 * leave the unread counters and come back on waking), conversation:updated after commit.
 */

/** A snooze may reach at most this far ahead. */
export const SNOOZE_MAX_DAYS = 366

/** PATCH /conversations/:id/priority; the same priority again changes nothing. */
export async function setPriority(ctx: Ctx, id: string, priority: ConversationPriority | null) {
  return mutateConversation(ctx, id, async (sql) => {
    const [cur] = await sql<{ priority: ConversationPriority | null }[]>`SELECT priority FROM conversations WHERE id = ${id}`
    if (cur.priority === priority) return {}
    return { after: await updateRow(sql, id, sql`priority = ${priority}`) }
  })
}

/**
 * `until` as an instant, checked against now: a future time at most 366 days ahead (400
 * otherwise); null stays null (until the guest writes). Checked before any row is touched, once
 * for a whole bulk request.
 */
export function checkSnoozeUntil(until: string | null, now = Date.now()): string | null {
  if (until === null) return null
  const t = Date.parse(until)
  if (!Number.isFinite(t) || t <= now || t > now + SNOOZE_MAX_DAYS * 86_400_000) throw invalidSnooze()
  return new Date(t).toISOString()
}

/**
 * PATCH /:id/pending (`until` undefined) and PATCH /:id/snooze. From any status: a RESOLVED one is
 * reopened into it (an analytics reopen, a new open period), an OPEN one keeps its period. The
 * assignee stays. The same state again (PENDING twice, the same snooze) changes nothing.
 */
export async function setWaiting(ctx: Ctx, id: string, waiting: { status: 'PENDING' } | { status: 'SNOOZED'; until: string | null }) {
  const until = waiting.status === 'SNOOZED' ? checkSnoozeUntil(waiting.until) : null
  return mutateConversation(ctx, id, async (sql, row) => {
    const [cur] = await sql<{ until: number | null }[]>`
      SELECT extract(epoch FROM snoozed_until)::float8 * 1000 AS until FROM conversations WHERE id = ${id}`
    const sameUntil = until === null ? cur.until === null : cur.until !== null && Math.round(cur.until) === Date.parse(until)
    if (row.status === waiting.status && sameUntil) return {}
    const [after] = await sql<(CounterState & { at: string })[]>`
      UPDATE conversations SET status = ${waiting.status}, snoozed_until = ${until}::timestamptz, closed_at = NULL,
        queued_at = NULL, updated_at = clock_timestamp()
      WHERE id = ${id}
      RETURNING ${sql.unsafe(COUNTER_RETURNING)}, updated_at AS at`
    if (isClosedStatus(row.status)) await recordReopened(sql, row, after.at)
    // Not OPEN any more: it waits on the customer, not in a queue, and its assignee has a slot
    // free for their teams' queues (docs/routing.md).
    return { after, route: { members: [row.assignedAgentId] } }
  })
}

/** The SYSTEM message a timed wake-up adds: an internal note, so no visitor ever sees the snooze. */
export const WAKE_MESSAGE = 'Snooze ended: the conversation is open again.'

/**
 * Wakes one due SNOOZED conversation (the sweep, src/triage/wake.ts): under the row lock, taken
 * with SKIP LOCKED so a row another replica is waking is left to it; the status and due time are
 * checked again under the lock, so a conversation is woken once whatever the number of sweepers,
 * and not at all if a guest message, a reopen or a new snooze got there first. Returns whether it
 * woke it.
 */
export async function wakeSnoozed(ctx: Ctx, c: { id: string; workspaceId: string }): Promise<boolean> {
  let message: MessageView | null = null
  try {
    const out = await mutateConversation(
      ctx,
      c.id,
      async (sql, row) => {
        const [due] = await sql`
          SELECT 1 FROM conversations WHERE id = ${c.id} AND status = 'SNOOZED' AND snoozed_until <= clock_timestamp()`
        if (!due) return {}
        const [m] = await sql<MessageRecord[]>`
          INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, private, created_at)
          VALUES (${uuidv7()}, ${row.workspaceId}, ${row.id}, 'SYSTEM', NULL, 'Parley', ${WAKE_MESSAGE}, true,
                  GREATEST(clock_timestamp(), ${row.lastMessageAt}::timestamptz + interval '1 microsecond'))
          RETURNING ${sql.unsafe(MESSAGE_COLUMNS)}`
        message = toMessageView(m)
        return { after: await updateRow(sql, c.id, sql`status = 'OPEN', snoozed_until = NULL`) }
      },
      { workspaceId: c.workspaceId, skipLocked: true },
    )
    if (out.changed && message) {
      ctx.events.publish([rooms.workspace(c.workspaceId)], 'message:new', { conversationId: c.id, message })
    }
    return out.changed
  } catch (err) {
    // Deleted, or held by another sweeper (SKIP LOCKED): not ours to wake.
    if ((err as { code?: string }).code === conversationNotFound().code) return false
    throw err
  }
}
