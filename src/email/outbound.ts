import { randomBytes } from 'node:crypto'
import type { Readable } from 'node:stream'
import type { JobWithMetadata } from 'pg-boss'
import type { MessageView } from '../../schemas/conversations.js'
import { attachmentsOfMessages, toAttachmentView, type AttachmentRecord } from '../attachments/view.js'
import { TRANSCRIPT_LINK_TTL_S } from '../attachments/links.js'
import type { Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { DeliveryStatus } from '../db/schema.js'
import { escapeHtml } from '../html.js'
import type { QueueDefinition } from '../jobs.js'
import { mailQueueOptions } from '../mail.js'
import { iso } from '../time.js'
import { MESSAGE_COLUMNS, toMessageView, type MessageRecord } from '../conversations/view.js'
import { conversationRooms } from '../conversations/visibility.js'
import { newEmailRef } from './ref.js'
import { channelMailSettings } from './secrets.js'
import { channelTransport, mailErrorText } from './transport.js'

/**
 * Outbound e-mail (API.md section 19, docs/email.md): a public agent message on an e-mail
 * conversation is queued in its own transaction (the 'out' row of message_emails with a fixed
 * Message-ID, `delivery.status` 'queued', a pg-boss job), then sent by the job over the channel's
 * SMTP, retried with the backoff of every durable mail queue, and marked 'sent' or 'failed'.
 */
export const EMAIL_OUTBOUND_QUEUE = 'email-outbound'

/** Files attached to the mail up to this many bytes in all; the rest go as signed links. */
export const MAX_ATTACHED_BYTES = 10 * 1024 * 1024
/** At most this many Message-IDs in References: the thread's first and its newest (RFC 5322 3.6.4 allows trimming). */
const MAX_REFERENCES = 20

export interface OutboundJob {
  messageId: string
}

export type Delivery = NonNullable<MessageView['delivery']>

/** An e-mail reply's Message-ID (without <>): random, so no one can guess one to thread into a conversation. */
function newMessageIdHeader(address: string): string {
  const domain = address.split('@')[1] || 'parley.invalid'
  return `${randomBytes(16).toString('hex')}.parley@${domain}`
}

/**
 * Inside postMessage's transaction, for a public agent message: when the conversation is on an
 * e-mail channel, fixes its headers (the 'out' row), marks it queued and enqueues the job. Returns
 * the message's delivery, or null for web chat. The caller wakes the worker after the commit.
 */
export async function queueEmailReply(
  ctx: Ctx,
  sql: Sql,
  conv: { id: string; workspaceId: string; channelId: string },
  message: { id: string; createdAt: string },
): Promise<Delivery | null> {
  const [channel] = await sql<{ kind: string; address: string | null }[]>`
    SELECT kind, email->>'address' AS address FROM channels WHERE id = ${conv.channelId}`
  if (channel?.kind !== 'email') return null
  // Every e-mail conversation gets its [#ref] when it starts; one that somehow has none gets it now.
  await sql`UPDATE conversations SET email_ref = ${newEmailRef()} WHERE id = ${conv.id} AND email_ref IS NULL`
  const thread = await sql<{ direction: 'in' | 'out'; header: string; references: string[] }[]>`
    SELECT direction, message_id_header AS header, "references" FROM message_emails
    WHERE conversation_id = ${conv.id} ORDER BY created_at, message_id`
  const inbound = thread.filter((m) => m.direction === 'in')
  const parent = inbound[inbound.length - 1] ?? null
  const refs = threadReferences(parent?.references ?? [], thread.map((m) => m.header))
  await sql`
    INSERT INTO message_emails (message_id, workspace_id, channel_id, conversation_id, direction, message_id_header, in_reply_to, "references", created_at)
    VALUES (${message.id}, ${conv.workspaceId}, ${conv.channelId}, ${conv.id}, 'out', ${newMessageIdHeader(channel.address ?? '')},
            ${parent?.header ?? null}, ${refs}::text[], ${message.createdAt}::timestamptz)`
  await sql`UPDATE messages SET delivery_status = 'queued', delivery_at = created_at WHERE id = ${message.id}`
  await ctx.jobs.send(sql, EMAIL_OUTBOUND_QUEUE, { messageId: message.id } satisfies OutboundJob, { singletonKey: message.id })
  return { status: 'queued', error: null, at: iso(message.createdAt) }
}

/**
 * References of a reply: the parent's References, then the thread's Message-IDs oldest first,
 * each once; past MAX_REFERENCES the first and the newest are kept.
 */
export function threadReferences(parentRefs: string[], thread: string[]): string[] {
  const all = [...new Set([...parentRefs, ...thread])]
  return all.length <= MAX_REFERENCES ? all : [all[0]!, ...all.slice(all.length - (MAX_REFERENCES - 1))]
}

/** "Re: <subject> [#ref]": one "Re:", the conversation's own ref at the end (an old one in the subject removed). */
export function replySubject(subject: string | null, ref: string): string {
  const base = (subject ?? '')
    .replace(/\[#[0-9a-z]{10}\]/gi, '')
    .replace(/^\s*((re|aw|sv|fwd?)\s*:\s*)+/i, '')
    .replace(/\s+/g, ' ')
    .trim()
  return `Re: ${base || '(no subject)'} [#${ref}]`
}

/** The outbound queue: the retry policy of every durable mail queue (mailQueueOptions). */
export const emailOutbound: QueueDefinition<OutboundJob> = {
  name: EMAIL_OUTBOUND_QUEUE,
  options: mailQueueOptions,
  handle: deliver,
}

interface OutRow {
  id: string
  conversationId: string
  workspaceId: string
  channelId: string
  guestId: string
  teamId: string | null
  deleted: boolean
  body: string
  senderName: string
  deliveryStatus: DeliveryStatus | null
  deliveryError: string | null
  header: string
  inReplyTo: string | null
  references: string[]
  subject: string | null
  ref: string
  guestName: string
  guestEmail: string | null
}

/** A failure no retry can mend: the message is marked failed at once. */
class PermanentFailure extends Error {}

async function deliver(ctx: Ctx, job: JobWithMetadata<OutboundJob>): Promise<void> {
  const { sql } = ctx
  const log = ctx.log.child({ jobId: job.id, messageId: job.data.messageId, attempt: job.retryCount + 1 })
  const [m] = await sql<OutRow[]>`
    SELECT m.id, m.conversation_id AS "conversationId", c.workspace_id AS "workspaceId", c.channel_id AS "channelId",
           c.guest_id AS "guestId", c.team_id AS "teamId", c.deleted_at IS NOT NULL AS deleted,
           m.body, m.sender_name AS "senderName", m.delivery_status AS "deliveryStatus", m.delivery_error AS "deliveryError",
           e.message_id_header AS header, e.in_reply_to AS "inReplyTo", e."references",
           c.subject, COALESCE(c.email_ref, '') AS ref, g.name AS "guestName", g.email AS "guestEmail"
    FROM messages m
    JOIN message_emails e ON e.message_id = m.id AND e.direction = 'out'
    JOIN conversations c ON c.id = m.conversation_id
    JOIN guests g ON g.id = c.guest_id
    WHERE m.id = ${job.data.messageId}`
  // Gone, or already sent or failed: a redelivered job sends nothing.
  if (!m || m.deliveryStatus !== 'queued') return
  try {
    if (m.deleted) throw new PermanentFailure('the conversation was deleted')
    if (!m.guestEmail) throw new PermanentFailure('the guest has no e-mail address')
    const settings = await channelMailSettings(sql, ctx.config, m.channelId).catch((err: unknown) => {
      throw new Error((err as { statusCode?: number }).statusCode ? (err as Error).message : 'the SMTP password cannot be decrypted with CHANNEL_SECRET_KEY')
    })
    if (!settings) throw new PermanentFailure('the channel is not an e-mail channel')
    const files = (await attachmentsOfMessages(sql, [m.id], 'outside')).get(m.id) ?? []
    const { attached, linked } = await splitFiles(ctx, files)
    const links = linked.map((f) => ({ name: f.filename, url: new URL(toAttachmentView(f, { config: ctx.config, ttlS: TRANSCRIPT_LINK_TTL_S }).url, ctx.config.API_URL).toString() }))
    const transport = await channelTransport(settings, ctx.config.SMTP_TIMEOUT_MS)
    try {
      await transport.sendMail({
        from: { name: `${m.senderName} via ${settings.fromName ?? settings.workspaceName}`, address: settings.address },
        to: { name: m.guestName, address: m.guestEmail },
        subject: replySubject(m.subject, m.ref),
        // Fixed when the reply was queued: a resend after a crash is the same mail to the receiving side.
        messageId: `<${m.header}>`,
        ...(m.inReplyTo ? { inReplyTo: `<${m.inReplyTo}>` } : {}),
        ...(m.references.length ? { references: m.references.map((r) => `<${r}>`) } : {}),
        text: textBody(m.body, links),
        html: htmlBody(m.body, links),
        attachments: attached,
      })
    } finally {
      transport.close()
    }
  } catch (err) {
    const permanent = err instanceof PermanentFailure || isPermanentSmtpError(err)
    const last = permanent || job.retryCount >= job.retryLimit
    const error = mailErrorText(err)
    log.warn({ err: { message: error }, willRetry: !last }, 'e-mail reply not sent')
    await setDelivery(ctx, m, last ? 'failed' : 'queued', error)
    if (last) return
    throw err
  }
  await setDelivery(ctx, m, 'sent', null)
  log.info('e-mail reply sent')
}

/** 5xx for the sender, the recipient or the content: a retry gets the same answer. */
function isPermanentSmtpError(err: unknown): boolean {
  const e = err as { responseCode?: number; command?: string }
  return typeof e.responseCode === 'number' && e.responseCode >= 500 && ['MAIL FROM', 'RCPT TO', 'DATA'].includes(e.command ?? '')
}

/** Files in attaching order: attached while the total stays within MAX_ATTACHED_BYTES, the rest linked. */
async function splitFiles(ctx: Ctx, files: AttachmentRecord[]) {
  const attached: { filename: string; contentType: string; content: Readable }[] = []
  const linked: AttachmentRecord[] = []
  let total = 0
  for (const f of files) {
    const size = Number(f.size)
    const body = total + size <= MAX_ATTACHED_BYTES ? await ctx.storage.get(f.storageKey) : null
    if (body) {
      total += size
      attached.push({ filename: f.filename, contentType: f.contentType, content: body })
    } else {
      linked.push(f)
    }
  }
  return { attached, linked }
}

function textBody(body: string, links: { name: string; url: string }[]): string {
  if (links.length === 0) return body
  return `${body}\n\n${links.map((l) => `${l.name}: ${l.url}`).join('\n')}\n`
}

function htmlBody(body: string, links: { name: string; url: string }[]): string {
  const paragraphs = body
    .split(/\n{2,}/)
    .map((p) => `<p>${escapeHtml(p).replace(/\n/g, '<br>')}</p>`)
    .join('\n')
  const list = links.length
    ? `\n<ul>${links.map((l) => `<li><a href="${escapeHtml(l.url)}">${escapeHtml(l.name)}</a></li>`).join('')}</ul>`
    : ''
  return `<!doctype html>\n<html><body>\n${paragraphs}${list}\n</body></html>\n`
}

/**
 * Records a delivery change and tells the members (`message:updated`): only from 'queued', so a
 * late or duplicate attempt never moves a sent or failed message back. A retry whose error is the
 * same as the last one's changes nothing and sends nothing.
 */
async function setDelivery(ctx: Ctx, m: OutRow, status: DeliveryStatus, error: string | null): Promise<void> {
  const { sql } = ctx
  const [row] = await sql<MessageRecord[]>`
    UPDATE messages SET delivery_status = ${status}, delivery_error = ${error}, delivery_at = clock_timestamp()
    WHERE id = ${m.id} AND delivery_status = 'queued'
      AND (${status} <> 'queued' OR delivery_error IS DISTINCT FROM ${error})
    RETURNING ${sql.unsafe(MESSAGE_COLUMNS)}`
  if (!row) return
  const files = (await attachmentsOfMessages(sql, [row.id], 'members')).get(row.id) ?? []
  const message = toMessageView(row, files.map((f) => toAttachmentView(f)))
  const to = await conversationRooms(sql, { workspaceId: m.workspaceId, guestId: m.guestId, teamId: m.teamId }, true)
  ctx.events.publish(to, 'message:updated', { conversationId: m.conversationId, message })
}
