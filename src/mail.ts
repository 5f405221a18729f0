import nodemailer, { type SendMailOptions } from 'nodemailer'
import type { Queue } from 'pg-boss'
import type { Config } from './config.js'
import type { Log } from './logger.js'

export interface Mailer {
  /** Sends one mail; rejects when the SMTP server is unreachable or refuses it. */
  send(mail: SendMailOptions): Promise<{ messageId?: string }>
  /** 'smtp' with SMTP_URL set, 'log' otherwise (development: the mail is written to the log). */
  readonly mode: 'smtp' | 'log'
  close(): void
}

/**
 * Outgoing mail. With SMTP_URL: nodemailer over SMTP, short timeouts so a down server fails an
 * attempt quickly (the job queue retries it). Without: nodemailer's stream transport renders
 * the full message and it is logged, so development needs no mail server.
 */
export function createMailer(config: Config, log: Log): Mailer {
  const timeout = config.SMTP_TIMEOUT_MS
  if (config.SMTP_URL) {
    const transport = nodemailer.createTransport({
      url: config.SMTP_URL,
      connectionTimeout: timeout,
      greetingTimeout: timeout,
      socketTimeout: timeout * 3,
    })
    return {
      mode: 'smtp',
      send: async (mail) => {
        const info = await transport.sendMail({ from: config.MAIL_FROM, ...mail })
        return { messageId: info.messageId }
      },
      close: () => transport.close(),
    }
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
  return {
    mode: 'log',
    send: async (mail) => {
      const info = await transport.sendMail({ from: config.MAIL_FROM, ...mail })
      const raw = Buffer.isBuffer(info.message) ? info.message.toString('utf8') : String(info.message)
      log.info({ mail: { to: mail.to, subject: mail.subject, messageId: info.messageId, raw } }, 'mail (no SMTP_URL: logged, not sent)')
      return { messageId: info.messageId }
    },
    close: () => {},
  }
}

/**
 * The retry policy of every durable mail queue (transcripts, offline messages, mentions):
 * exponential backoff from TRANSCRIPT_RETRY_DELAY_S up to TRANSCRIPT_RETRY_DELAY_MAX_S,
 * TRANSCRIPT_RETRY_LIMIT retries (defaults 30 s .. 1 h, 16: about 10 hours of SMTP outage lose
 * nothing). A job active for longer than expireInSeconds (its worker died) is retried by pg-boss.
 */
export function mailQueueOptions(config: Config): Omit<Queue, 'name'> {
  return {
    retryLimit: config.TRANSCRIPT_RETRY_LIMIT,
    retryDelay: config.TRANSCRIPT_RETRY_DELAY_S,
    retryBackoff: true,
    retryDelayMax: config.TRANSCRIPT_RETRY_DELAY_MAX_S,
    expireInSeconds: 600,
    deleteAfterSeconds: 7 * 24 * 3600,
  }
}
