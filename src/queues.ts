import { attachmentsCleanup } from './attachments/cleanup.js'
import { emailOutbound } from './email/outbound.js'
import type { QueueDefinition } from './jobs.js'
import { mentionMail } from './mentions/mail.js'
import { offlineMail } from './support/offline-mail.js'
import { transcriptMail } from './transcripts/worker.js'

/**
 * Every durable job queue, one line per area: src/jobs.ts creates each queue at start and, with
 * JOBS_WORKER, runs its worker in this process. A new area adds its QueueDefinition here.
 */
export const queues: readonly QueueDefinition<any>[] = [transcriptMail, mentionMail, attachmentsCleanup, offlineMail, emailOutbound]
