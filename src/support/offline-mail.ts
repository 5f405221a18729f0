import type { JobWithMetadata } from 'pg-boss'
import type { Ctx } from '../context.js'
import type { QueueDefinition } from '../jobs.js'
import { mailQueueOptions } from '../mail.js'

export const OFFLINE_MAIL_QUEUE = 'offline-message-mail'

export interface OfflineMailJob {
  conversationId: string
  /** The owner or admin to tell. */
  userId: string
}

/**
 * Tells an owner or admin about an offline message, with the retry policy of every durable
 * mail queue (mailQueueOptions), so an SMTP outage of hours loses nothing. Rendered at send time from the database: a member disabled or removed since, or a
 * conversation deleted since, gets no mail.
 */
export const offlineMail: QueueDefinition<OfflineMailJob> = {
  name: OFFLINE_MAIL_QUEUE,
  options: mailQueueOptions,
  handle: deliver,
}

interface MailFacts {
  memberEmail: string
  guestName: string
  guestEmail: string | null
  body: string
  createdAt: string
}

/** Header values come from people: one line, bounded. */
const oneLine = (s: string, max = 120) => s.replace(/[\r\n\t]+/g, ' ').slice(0, max)

async function deliver(ctx: Ctx, job: JobWithMetadata<OfflineMailJob>): Promise<void> {
  const { conversationId, userId } = job.data
  const log = ctx.log.child({ jobId: job.id, conversationId, attempt: job.retryCount + 1 })
  const [facts] = await ctx.sql<MailFacts[]>`
    SELECT m.email AS "memberEmail", g.name AS "guestName", g.email AS "guestEmail", first.body, c.created_at AS "createdAt"
    FROM conversations c
    JOIN guests g ON g.id = c.guest_id
    JOIN members m ON m.workspace_id = c.workspace_id AND m.user_id = ${userId} AND m.status = 'active'
    CROSS JOIN LATERAL (
      SELECT body FROM messages WHERE conversation_id = c.id ORDER BY created_at, id LIMIT 1
    ) first
    WHERE c.id = ${conversationId} AND c.deleted_at IS NULL`
  if (!facts || !facts.memberEmail) {
    log.info('offline message mail not sent: member or conversation gone')
    return
  }
  const link = new URL(`/conversations/${conversationId}`, ctx.config.APP_URL).toString()
  const from = facts.guestEmail ? `${facts.guestName} <${facts.guestEmail}>` : `${facts.guestName} (no e-mail address given)`
  await ctx.mailer.send({
    kind: 'offline-message',
    to: facts.memberEmail,
    subject: `Offline message from ${oneLine(facts.guestName)}`,
    // One Message-ID per conversation and member: a resend after a crash is recognisable.
    messageId: `<offline-${conversationId}-${Buffer.from(userId).toString('hex').slice(0, 64)}@parley.invalid>`,
    headers: { 'Auto-Submitted': 'auto-generated', 'X-Parley-Conversation': conversationId },
    ...(facts.guestEmail ? { replyTo: { name: oneLine(facts.guestName), address: facts.guestEmail } } : {}),
    text: `A visitor left a message while nobody was online.\n\nFrom: ${from}\n\n${facts.body}\n\nOpen the conversation: ${link}\n`,
  })
  log.info({ mode: ctx.mailer.mode }, 'offline message mail sent')
}
