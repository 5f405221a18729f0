import { Readable } from 'node:stream'
import type { JobWithMetadata } from 'pg-boss'
import type { Ctx } from '../context.js'
import type { transcriptRequests } from '../db/schema.js'
import type { QueueDefinition } from '../jobs.js'
import { mailQueueOptions } from '../mail.js'
import { findConversationView } from '../conversations/view.js'
import { renderTranscript } from './render.js'

export const TRANSCRIPT_QUEUE = 'transcript-mail'

export interface TranscriptJob {
  requestId: string
}

/**
 * The transcript mail queue, with the retry policy of every durable mail queue (mailQueueOptions).
 */
export const transcriptMail: QueueDefinition<TranscriptJob> = {
  name: TRANSCRIPT_QUEUE,
  options: mailQueueOptions,
  handle: deliver,
}

type Row = Pick<typeof transcriptRequests.$inferSelect, 'id' | 'conversationId' | 'email' | 'status'>

/** Renders the transcript from the database now, mails it, marks the request sent. */
async function deliver(ctx: Ctx, job: JobWithMetadata<TranscriptJob>): Promise<void> {
  const sql = ctx.sql
  const log = ctx.log.child({ jobId: job.id, requestId: job.data.requestId, attempt: job.retryCount + 1 })
  const [req] = await sql<Row[]>`
    SELECT id, conversation_id AS "conversationId", email, status
    FROM transcript_requests WHERE id = ${job.data.requestId}`
  // Already sent: this is a redelivery (e.g. the process died after marking); never send twice.
  if (!req || req.status !== 'queued') return
  const conversation = await findConversationView(sql, req.conversationId)
  if (!conversation) {
    // Deleted since the request: it leaves every output, mail included.
    await sql`UPDATE transcript_requests SET status = 'failed' WHERE id = ${req.id} AND status = 'queued'`
    log.info('transcript not sent: conversation deleted')
    return
  }
  const exportedAt = new Date().toISOString()
  const stream = (format: 'txt' | 'html') => Readable.from(renderTranscript(sql, conversation, format, 'outside', exportedAt, ctx.config), { objectMode: false })
  try {
    await ctx.mailer.send({
      kind: 'transcript',
      to: req.email,
      subject: `Transcript of your conversation of ${conversation.createdAt.slice(0, 10)}`,
      // One Message-ID per request: should a crash between SMTP acceptance and the 'sent' mark
      // cause a resend, mail clients can recognise the duplicate.
      messageId: `<transcript-${req.id}@parley.invalid>`,
      headers: { 'Auto-Submitted': 'auto-generated', 'X-Parley-Conversation': conversation.id },
      text: stream('txt'),
      html: stream('html'),
    })
  } catch (err) {
    const last = job.retryCount >= job.retryLimit
    if (last) await sql`UPDATE transcript_requests SET status = 'failed' WHERE id = ${req.id} AND status = 'queued'`
    log.warn({ err: { message: (err as Error).message, code: (err as { code?: string }).code }, willRetry: !last }, 'transcript mail failed')
    throw err
  }
  await sql`UPDATE transcript_requests SET status = 'sent', sent_at = now() WHERE id = ${req.id} AND status = 'queued'`
  log.info({ mode: ctx.mailer.mode }, 'transcript mail sent')
}
