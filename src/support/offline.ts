import { v7 as uuidv7 } from 'uuid'
import type { ConversationView } from '../../schemas/conversations.js'
import type { OfflineMessageInput } from '../../schemas/support.js'
import { recordMessage } from '../analytics/record.js'
import { visitorOf, type Ctx } from '../context.js'
import { applyCountersDelta, countersDelta, lockCountersShared } from '../conversations/counters.js'
import { PREVIEW_LENGTH } from '../conversations/messages.js'
import { insertConversation } from '../conversations/lifecycle.js'
import { findConversationView, MESSAGE_COLUMNS, toMessageView, type MessageRecord } from '../conversations/view.js'
import { conversationNotFound } from '../errors.js'
import { conversationRooms, messageRooms } from '../conversations/visibility.js'
import { OFFLINE_MAIL_QUEUE, type OfflineMailJob } from './offline-mail.js'

export interface OfflineMessageResult {
  conversation: ConversationView
  /** How many e-mails were queued (0 when a member was online). */
  mailsQueued: number
}

/**
 * POST /support/offline-message (a visitor). One transaction: `email` (when given) becomes the
 * guest's address (a changed address is no longer verified, as in POST /auth), a new conversation
 * holds the guest's message, and when no member is online one mail job per active owner and admin
 * with an address is queued in the durable mail queue (singleton per conversation and member, so
 * a redelivered job never mails twice). Events after commit, as for any new conversation and
 * message.
 */
export async function sendOfflineMessage(ctx: Ctx, input: OfflineMessageInput): Promise<OfflineMessageResult> {
  const v = visitorOf(ctx)
  let someoneOnline = false
  try {
    someoneOnline = await ctx.presence.anyMemberOnline(v.workspaceId)
  } catch (err) {
    // Unknown: mail the team rather than leave the message unseen.
    ctx.log.warn({ err: { message: (err as Error).message } }, 'presence unavailable; mailing the offline message')
  }
  const id = uuidv7()
  const email = input.email?.trim()
  const out = await ctx.sql.begin(async (tx) => {
    await lockCountersShared(tx, v.workspaceId)
    const { createdAt, teamId } = await insertConversation(tx, v, id, ctx.config.VISITOR_OPEN_CONVERSATIONS_MAX)
    const [guest] = await tx<{ name: string }[]>`
      UPDATE guests SET
        email = COALESCE(${email ?? null}, email),
        verified = verified AND lower(email) IS NOT DISTINCT FROM lower(COALESCE(${email ?? null}, email)),
        last_seen_at = now(), updated_at = now()
      WHERE id = ${v.guestId}
      RETURNING name`
    const [message] = await tx<MessageRecord[]>`
      INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
      VALUES (${uuidv7()}, ${v.workspaceId}, ${id}, 'GUEST', ${v.guestId}, ${guest.name}, ${input.body}, clock_timestamp())
      RETURNING ${tx.unsafe(MESSAGE_COLUMNS)}`
    // Analytics: the guest's message is the new conversation's first public message (received).
    const facts = { id, workspaceId: v.workspaceId, channelId: v.channelId, assignedAgentId: null, cycle: 0, cycleStartedAt: createdAt, awaitingReply: true, publicMessages: 0 }
    await recordMessage(tx, facts, { senderType: 'GUEST', senderId: v.guestId, at: message.createdAt, private: false })
    await tx`
      UPDATE conversations SET last_message_at = ${message.createdAt}::timestamptz, last_message_preview = left(${input.body}, ${PREVIEW_LENGTH}),
        unread_count = 1, updated_at = clock_timestamp()
      WHERE id = ${id}`
    const before = { status: 'OPEN', deleted: false, assignedAgentId: null, channelId: v.channelId, unreadCount: 0, teamId } as const
    await applyCountersDelta(tx, v.workspaceId, countersDelta(before, { ...before, unreadCount: 1 }))
    let mailsQueued = 0
    if (!someoneOnline) {
      const recipients = await tx<{ userId: string }[]>`
        SELECT user_id AS "userId" FROM members
        WHERE workspace_id = ${v.workspaceId} AND status = 'active' AND role IN ('owner', 'admin') AND email <> ''`
      for (const r of recipients) {
        const data: OfflineMailJob = { conversationId: id, userId: r.userId }
        await ctx.jobs.send(tx, OFFLINE_MAIL_QUEUE, data, { singletonKey: `${id}:${r.userId}` })
        mailsQueued++
      }
    }
    const conversation = await findConversationView(tx, id)
    if (!conversation) throw conversationNotFound()
    return { conversation, message: toMessageView(message), mailsQueued }
  })
  ctx.routing.teams([out.conversation.teamId])
  // The channel's default team may be private (API.md section 16): only who may see it hears of it.
  const conversation = { workspaceId: v.workspaceId, guestId: v.guestId, teamId: out.conversation.teamId }
  ctx.events.publish(await conversationRooms(ctx.sql, conversation), 'conversation:updated', { conversation: out.conversation })
  ctx.events.publish(await messageRooms(ctx.sql, conversation, out.message), 'message:new', { conversationId: id, message: out.message })
  if (out.mailsQueued > 0) ctx.jobs.wake(OFFLINE_MAIL_QUEUE)
  return { conversation: out.conversation, mailsQueued: out.mailsQueued }
}
