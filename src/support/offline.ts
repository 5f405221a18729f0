import { v7 as uuidv7 } from 'uuid'
import type { ConversationView } from '../../schemas/conversations.js'
import type { OfflineMessageInput } from '../../schemas/support.js'
import { visitorOf, type Ctx } from '../context.js'
import { lockCountersShared } from '../conversations/counters.js'
import { insertFirstGuestMessage } from '../conversations/messages.js'
import { insertConversation } from '../conversations/lifecycle.js'
import { findConversationView, toMessageView } from '../conversations/view.js'
import { conversationNotFound } from '../errors.js'
import { rooms } from '../events.js'
import { conversationFor, conversationRooms, messageRooms } from '../conversations/visibility.js'
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
    const message = await insertFirstGuestMessage(tx, { id, workspaceId: v.workspaceId, channelId: v.channelId, guestId: v.guestId, createdAt, teamId }, guest.name, input.body)
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
  // Members see its service level (API.md section 18), the visitor does not.
  const conversation = { workspaceId: v.workspaceId, guestId: v.guestId, teamId: out.conversation.teamId }
  const outside = conversationFor(out.conversation, 'outside')
  ctx.events.publish(await conversationRooms(ctx.sql, conversation, true), 'conversation:updated', { conversation: out.conversation })
  ctx.events.publish([rooms.guest(v.guestId)], 'conversation:updated', { conversation: outside })
  ctx.events.publish(await messageRooms(ctx.sql, conversation, out.message), 'message:new', { conversationId: id, message: out.message })
  if (out.mailsQueued > 0) ctx.jobs.wake(OFFLINE_MAIL_QUEUE)
  return { conversation: outside, mailsQueued: out.mailsQueued }
}
