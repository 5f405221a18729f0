import { createHash } from 'node:crypto'
import type { SendMailOptions, Transporter } from 'nodemailer'
import type { Queue } from 'pg-boss'
import type { Config } from './config.js'
import type { Log } from './logger.js'

/** One outgoing mail, and what it is (the only part of it a log line names). */
export type OutgoingMail = SendMailOptions & { kind: 'transcript' | 'mention' | 'offline-message' }

export interface Mailer {
  /** Sends one mail; rejects when the SMTP server is unreachable or refuses it. */
  send(mail: OutgoingMail): Promise<{ messageId?: string }>
  /** 'smtp' with SMTP_URL set, 'log' otherwise (development: the mail is written to the log). */
  readonly mode: 'smtp' | 'log'
  close(): void
}

/**
 * Outgoing mail. With SMTP_URL: nodemailer over SMTP, short timeouts so a down server fails an
 * attempt quickly (the job queue retries it). Without: nodemailer's stream transport renders
 * the full message (so rendering still runs and fails as it would) and it is dropped; the log
 * gets a summary only (kind, a hash of the recipient, size): bodies hold transcripts and guests'
 * addresses, which never reach the log (docs/security.md).
 */
export function createMailer(config: Config, log: Log): Mailer {
  const timeout = config.SMTP_TIMEOUT_MS
  // nodemailer is loaded with the first mail (layer rule 10): most processes never send one.
  let transport: Promise<Transporter> | undefined
  const transporter = () =>
    (transport ??= import('nodemailer').then(({ default: nodemailer }) =>
      config.SMTP_URL
        ? nodemailer.createTransport({ url: config.SMTP_URL, connectionTimeout: timeout, greetingTimeout: timeout, socketTimeout: timeout * 3 })
        : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' }),
    ))
  const close = () => void transport?.then((t) => t.close()).catch(() => {})
  if (config.SMTP_URL) {
    return {
      mode: 'smtp',
      send: async ({ kind: _kind, ...mail }) => {
        const info = await (await transporter()).sendMail({ from: config.MAIL_FROM, ...mail })
        return { messageId: info.messageId }
      },
      close,
    }
  }
  return {
    mode: 'log',
    send: async ({ kind, ...mail }) => {
      const info = await (await transporter()).sendMail({ from: config.MAIL_FROM, ...mail })
      const bytes = Buffer.isBuffer(info.message) ? info.message.length : Buffer.byteLength(String(info.message))
      log.info({ mail: { kind, to: recipientHash(info.envelope.to), bytes, messageId: info.messageId } }, 'mail (no SMTP_URL: logged, not sent)')
      return { messageId: info.messageId }
    },
    close,
  }
}

/**
 * Who a mail went to, as a log may say it: the first 12 hex digits of the SHA-256 of the
 * lower-cased addresses. Enough to tell two mails' recipients apart or match a known address;
 * the address itself is not written.
 */
export function recipientHash(to: string[]): string {
  return createHash('sha256').update(to.map((a) => a.trim().toLowerCase()).sort().join(',')).digest('hex').slice(0, 12)
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
