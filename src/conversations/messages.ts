import { v7 as uuidv7 } from 'uuid'
import { senderOf, type Ctx } from '../context.js'
import { keysetPage, type Page } from '../cursor.js'
import type { MessageView } from '../../schemas/conversations.js'
import { attachToMessage } from '../attachments/files.js'
import { attachmentsOfMessages, toAttachmentView, type AttachmentRecord } from '../attachments/view.js'
import type { Sql } from '../db/client.js'
import { badRequest } from '../errors.js'
import { recordMessage, recordReopened } from '../analytics/record.js'
import { addMentions, publishMentions, type NewMentions } from '../mentions/mentions.js'
import { findConversationForCaller } from './access.js'
import { COUNTER_RETURNING, isClosedStatus, mutateConversation, type LockedConversation } from './lifecycle.js'
import { queueOnReopen } from '../teams/rules.js'
import { EMAIL_OUTBOUND_QUEUE, queueEmailReply } from '../email/outbound.js'
import { addToBatch, type ConversationBatch } from './batch.js'
import { applyCountersDelta, countersDelta, type CounterState } from './counters.js'
import { MESSAGE_COLUMNS, toMessageView, type MessageRecord } from './view.js'
import { audienceOf, publishNewMessage, visibleMessages, type Audience } from './visibility.js'

export const PREVIEW_LENGTH = 140

export interface PostMessageResult {
  message: MessageView
  /** False when this was a retry of an earlier send with the same clientMessageId. */
  created: boolean
}

/**
 * More of a guest message's own transaction (inbound e-mail, src/email/inbound.ts): runs under
 * the conversation's lock right after the insert; the files it answers join the message. It may
 * throw to roll the whole message back.
 */
export type MessageHook = (sql: Sql, message: MessageRecord, row: LockedConversation) => Promise<AttachmentRecord[]>

export interface PostMessageInput {
  body: string
  clientMessageId?: string
  private?: boolean
  mentions?: string[]
  /** Pending uploads of this conversation by this sender (API.md section 10). */
  attachmentIds?: string[]
}

/**
 * POST /conversations/:id/messages. Under the conversation's row lock: insert (a retried
 * clientMessageId hits the unique index and returns the first message, changing nothing), move
 * lastMessageAt/preview, and for a guest message count it unread and reopen a resolved
 * conversation. The message time is taken under the lock and kept after the previous message and
 * the agents' seen mark, so messages order by (createdAt, id) in sending order and the unread
 * recount (guest messages after the seen mark) always agrees with unread_count.
 *
 * A private note (members only) changes nothing of the conversation (no lastMessageAt, preview,
 * updatedAt or counter: nothing a visitor could notice), goes to the members' room only, and
 * writes its mentions in the same transaction.
 */
export async function postMessage(ctx: Ctx, id: string, input: PostMessageInput, within?: MessageHook): Promise<PostMessageResult> {
  const sender = senderOf(ctx)
  if (sender.type !== 'AGENT' && (input.private !== undefined || input.mentions !== undefined)) {
    throw badRequest('private and mentions are for members only')
  }
  const note = input.private === true
  if (input.mentions !== undefined && !note) throw badRequest('mentions are only allowed with private: true')
  const fileIds = input.attachmentIds ?? []
  if (input.body.length === 0 && fileIds.length === 0) throw badRequest('body must not be empty unless attachmentIds names a file')
  const senderType = sender.type
  const clientId = input.clientMessageId ?? null
  let mentioned: NewMentions | null = null
  let attached: AttachmentRecord[] = []
  let mailed = false
  // Who the message:new goes to, inside a batch (its view is read only before the batch's commit).
  let target = null as { id: string; workspaceId: string; guestId: string; teamId: string | null } | null

  const out = await mutateConversation<PostMessageResult>(ctx, id, async (sql, row) => {
    let senderId: string
    let senderName: string
    if (sender.type === 'AGENT') {
      senderId = sender.id
      senderName = sender.member.name
    } else {
      // A guest message is a sign of life: the visitor list's lastSeenAt moves with it.
      const [guest] = await sql<{ name: string }[]>`UPDATE guests SET last_seen_at = now() WHERE id = ${row.guestId} RETURNING name`
      senderId = row.guestId
      senderName = guest?.name ?? 'Visitor'
    }
    const [inserted] = await sql<MessageRecord[]>`
      INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, client_message_id, private, created_at)
      VALUES (${uuidv7()}, ${row.workspaceId}, ${row.id}, ${senderType}, ${senderId}, ${senderName}, ${input.body}, ${clientId}, ${note},
              GREATEST(clock_timestamp(), ${row.lastMessageAt}::timestamptz + interval '1 microsecond',
                       COALESCE(${row.agentLastSeenAt}::timestamptz + interval '1 microsecond', '-infinity')))
      ON CONFLICT (conversation_id, sender_type, client_message_id) WHERE client_message_id IS NOT NULL DO NOTHING
      RETURNING ${sql.unsafe(MESSAGE_COLUMNS)}`
    if (!inserted) {
      const [first] = await sql<MessageRecord[]>`
        SELECT ${sql.unsafe(MESSAGE_COLUMNS)} FROM messages
        WHERE conversation_id = ${row.id} AND sender_type = ${senderType} AND client_message_id = ${clientId}`
      return { result: { message: await withAttachments(sql, first!, audienceOf(ctx.caller)), created: false } }
    }
    // The files go with the message or not at all: a bad id rolls the whole send back. A private
    // note's files are private too: members only (media, files tab).
    const files = await attachToMessage(sql, {
      ids: fileIds,
      conversationId: row.id,
      messageId: inserted.id,
      uploaderType: senderType,
      uploaderId: senderId,
      private: note,
    })
    if (within) files.push(...(await within(sql, inserted, row)))
    attached = files
    target = { id: row.id, workspaceId: row.workspaceId, guestId: row.guestId, teamId: row.teamId }
    const message = toMessageView(inserted, files.map((f) => toAttachmentView(f)))
    const guestMessage = senderType === 'GUEST'
    // A guest message makes a RESOLVED, PENDING or SNOOZED conversation OPEN (API.md section 17).
    const reopen = guestMessage && row.status !== 'OPEN'
    // Analytics: a guest message on a resolved conversation reopens it at the message's moment
    // (the message belongs to the new open period); a note is skipped by its flag. Waking a
    // PENDING or SNOOZED one is not a reopen: it never left its open period.
    const facts = reopen && isClosedStatus(row.status) ? await recordReopened(sql, row, inserted.createdAt) : row
    await recordMessage(sql, facts, { senderType, senderId, at: inserted.createdAt, private: note })
    if (note) {
      const m = { workspaceId: row.workspaceId, conversationId: row.id, messageId: inserted.id, body: input.body, createdAt: inserted.createdAt }
      mentioned = await addMentions(ctx, sql, m, input.mentions ?? [])
      return { result: { message, created: true } }
    }
    // A public agent reply on an e-mail conversation is mailed to the guest: queued here, in the
    // message's transaction, sent by the outbound job (src/email/outbound.ts).
    if (senderType === 'AGENT') {
      const delivery = await queueEmailReply(ctx, sql, row, inserted)
      if (delivery) {
        message.delivery = delivery
        mailed = true
      }
    }
    const preview = input.body.length > 0 ? input.body : files.map((f) => f.filename).join(', ')
    const [after] = await sql<CounterState[]>`
      UPDATE conversations SET
        last_message_at = ${inserted.createdAt}::timestamptz,
        last_message_preview = left(${preview}, ${PREVIEW_LENGTH}),
        unread_count = unread_count + ${guestMessage ? 1 : 0},
        status = CASE WHEN ${reopen} THEN 'OPEN' ELSE status END,
        closed_at = CASE WHEN ${reopen} THEN NULL ELSE closed_at END,
        snoozed_until = CASE WHEN ${reopen} THEN NULL ELSE snoozed_until END,
        updated_at = clock_timestamp()
      WHERE id = ${row.id}
      RETURNING ${sql.unsafe(COUNTER_RETURNING)}`
    // A reopen keeps the assignee only if still an active member of its team (docs/routing.md).
    const requeued = reopen ? await queueOnReopen(sql, row) : null
    target.teamId = (requeued ?? after)?.teamId ?? row.teamId
    // The message event tells clients about the new message; conversation:updated only when
    // the conversation's state changed beyond it (a guest message reopening it).
    return { after: requeued ?? after, result: { message, created: true }, publishUpdate: reopen, route: reopen ? { teams: [row.teamId] } : undefined }
  })

  const result = out.result!
  if (result.created) {
    const publish = async (conv: { id: string; workspaceId: string; guestId: string; teamId?: string | null }) => {
      await publishNewMessage(ctx, conv, result.message, attached)
      if (mentioned) publishMentions(ctx, mentioned)
      if (mailed) ctx.jobs.wake(EMAIL_OUTBOUND_QUEUE)
    }
    // Inside a batch (mutateConversation joined it: no view yet) the message is published after
    // the batch's commit, in order with its other changes' events.
    if (out.conversation) await publish(out.conversation)
    else if (ctx.batch && target) {
      const conv = target
      ctx.batch.after.push(() => publish(conv))
    }
  }
  return result
}

/**
 * The first message of a conversation its guest starts with text (an offline message, an inbound
 * mail), inside the transaction that inserted the conversation (insertConversation, under the
 * workspace's counter lock): the message, its analytics fact (the first public message,
 * received), the conversation's lastMessageAt, preview and unread count, and the counters (added
 * to `batch`'s instead when the transaction is a batch's: src/conversations/batch.ts).
 */
export async function insertFirstGuestMessage(
  sql: Sql,
  c: { id: string; workspaceId: string; channelId: string; guestId: string; createdAt: string; teamId: string | null },
  senderName: string,
  body: string,
  preview: string = body,
  batch?: ConversationBatch,
): Promise<MessageRecord> {
  const [message] = await sql<MessageRecord[]>`
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    VALUES (${uuidv7()}, ${c.workspaceId}, ${c.id}, 'GUEST', ${c.guestId}, ${senderName}, ${body}, clock_timestamp())
    RETURNING ${sql.unsafe(MESSAGE_COLUMNS)}`
  const facts = { id: c.id, workspaceId: c.workspaceId, channelId: c.channelId, assignedAgentId: null, cycle: 0, cycleStartedAt: c.createdAt, awaitingReply: true, publicMessages: 0 }
  await recordMessage(sql, facts, { senderType: 'GUEST', senderId: c.guestId, at: message!.createdAt, private: false })
  await sql`
    UPDATE conversations SET last_message_at = ${message!.createdAt}::timestamptz, last_message_preview = left(${preview}, ${PREVIEW_LENGTH}),
      unread_count = 1, updated_at = clock_timestamp()
    WHERE id = ${c.id}`
  const before = { status: 'OPEN', deleted: false, assignedAgentId: null, channelId: c.channelId, unreadCount: 0, teamId: c.teamId } as const
  const delta = countersDelta(before, { ...before, unreadCount: 1 })
  // In a batch (a mailbox's batch of mails) the counters are written once, before its commit.
  if (batch) addToBatch(batch, delta)
  else await applyCountersDelta(sql, c.workspaceId, delta)
  return message!
}

/** GET /conversations/:id/messages: oldest first, keyset on (created_at, id). */
export async function listMessages(
  ctx: Ctx,
  id: string,
  query: { limit: number; cursor?: string },
): Promise<Page<MessageView>> {
  const conv = await findConversationForCaller(ctx, id)
  const { sql } = ctx
  const page = await keysetPage(ctx, {
    cursor: query.cursor,
    params: { list: 'messages', conversationId: conv.id },
    key: ['timestamp', 'uuid'],
    limit: query.limit,
    fetch: (after, take) => sql<MessageRecord[]>`
      SELECT ${sql.unsafe(MESSAGE_COLUMNS)} FROM messages
      WHERE conversation_id = ${conv.id} ${visibleMessages(sql, audienceOf(ctx.caller))}
        ${after ? sql`AND (created_at, id) > (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
      ORDER BY created_at, id
      LIMIT ${take}`,
    keyOf: (m) => [m.createdAt, m.id],
  })
  const files = await attachmentsOfMessages(sql, page.data.map((m) => m.id), audienceOf(ctx.caller))
  return { data: page.data.map((m) => toMessageView(m, (files.get(m.id) ?? []).map((f) => toAttachmentView(f)))), nextCursor: page.nextCursor }
}

/** One message with its files (a retried send answers the first message as it was). */
async function withAttachments(sql: Sql, m: MessageRecord, audience: Audience): Promise<MessageView> {
  const files = await attachmentsOfMessages(sql, [m.id], audience)
  return toMessageView(m, (files.get(m.id) ?? []).map((f) => toAttachmentView(f)))
}
