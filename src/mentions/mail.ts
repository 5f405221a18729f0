import type { JobWithMetadata } from 'pg-boss'
import type { Ctx } from '../context.js'
import type { members, mentions } from '../db/schema.js'
import type { QueueDefinition } from '../jobs.js'
import { mailQueueOptions } from '../mail.js'

export const MENTION_QUEUE = 'mention-mail'

export interface MentionJob {
  mentionId: string
}

/**
 * Mention e-mails (MENTION_EMAIL=true), on the durable queue: the job is enqueued in the note's
 * transaction with the mention's id as job id and singleton key. Retries back off from 30 s to
 * an hour, 12 times (about 6 hours of SMTP outage); a mention is a nudge, not a record.
 */
export const mentionMail: QueueDefinition<MentionJob> = {
  name: MENTION_QUEUE,
  options: mailQueueOptions,
  handle: deliver,
}

type Row = Pick<typeof mentions.$inferSelect, 'id' | 'conversationId' | 'byName' | 'excerpt' | 'mailedAt'> &
  Pick<typeof members.$inferSelect, 'email' | 'name'>

/**
 * Sends the mail now and marks the mention mailed. Nothing is sent for a mention that is gone
 * (its conversation was deleted), already mailed (a redelivery), or whose member has no e-mail
 * address or is no longer active. The author is never a recipient (src/mentions/mentions.ts).
 */
async function deliver(ctx: Ctx, job: JobWithMetadata<MentionJob>): Promise<void> {
  const { sql, config } = ctx
  const log = ctx.log.child({ jobId: job.id, mentionId: job.data.mentionId, attempt: job.retryCount + 1 })
  const [m] = await sql<Row[]>`
    SELECT x.id, x.conversation_id AS "conversationId", x.by_name AS "byName", x.excerpt, x.mailed_at AS "mailedAt",
           mb.email, mb.name
    FROM mentions x JOIN members mb ON mb.workspace_id = x.workspace_id AND mb.user_id = x.user_id AND mb.status = 'active'
    WHERE x.id = ${job.data.mentionId}`
  if (!m || m.mailedAt !== null || !m.email) {
    log.info('mention mail not sent: mention gone, already mailed, or no active member address')
    return
  }
  const link = new URL(`/conversations/${m.conversationId}`, config.APP_URL).toString()
  await ctx.mailer.send({
    kind: 'mention',
    to: m.email,
    subject: `${oneLine(m.byName)} mentioned you`,
    messageId: `<mention-${m.id}@parley.invalid>`,
    headers: { 'Auto-Submitted': 'auto-generated', 'X-Parley-Conversation': m.conversationId },
    text: `${oneLine(m.byName)} mentioned you in an internal note:\n\n  ${m.excerpt}\n\nOpen the conversation: ${link}\n`,
  })
  await sql`UPDATE mentions SET mailed_at = clock_timestamp() WHERE id = ${m.id} AND mailed_at IS NULL`
  log.info({ mode: ctx.mailer.mode }, 'mention mail sent')
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim()
