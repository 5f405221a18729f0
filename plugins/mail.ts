import fp from 'fastify-plugin'
import nodemailer, { type SendMailOptions } from 'nodemailer'

export interface Mailer {
  /** Sends one mail; rejects when the SMTP server is unreachable or refuses it. */
  send(mail: SendMailOptions): Promise<{ messageId?: string }>
  /** 'smtp' with SMTP_URL set, 'log' otherwise (development: the mail is written to the log). */
  readonly mode: 'smtp' | 'log'
}

declare module 'fastify' {
  interface FastifyInstance {
    mailer: Mailer
  }
}

/**
 * Outgoing mail. With SMTP_URL: nodemailer over SMTP, short timeouts so a down server fails an
 * attempt quickly (the job queue retries it). Without: nodemailer's stream transport renders
 * the full message and it is logged, so development needs no mail server.
 */
export default fp(
  async (app) => {
    const timeout = app.config.SMTP_TIMEOUT_MS
    if (app.config.SMTP_URL) {
      const transport = nodemailer.createTransport({
        url: app.config.SMTP_URL,
        connectionTimeout: timeout,
        greetingTimeout: timeout,
        socketTimeout: timeout * 3,
      })
      app.decorate('mailer', {
        mode: 'smtp' as const,
        send: async (mail: SendMailOptions) => {
          const info = await transport.sendMail({ from: app.config.MAIL_FROM, ...mail })
          return { messageId: info.messageId }
        },
      })
      app.addHook('onClose', async () => transport.close())
    } else {
      const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
      app.decorate('mailer', {
        mode: 'log' as const,
        send: async (mail: SendMailOptions) => {
          const info = await transport.sendMail({ from: app.config.MAIL_FROM, ...mail })
          const raw = Buffer.isBuffer(info.message) ? info.message.toString('utf8') : String(info.message)
          app.log.info({ mail: { to: mail.to, subject: mail.subject, messageId: info.messageId, raw } }, 'mail (no SMTP_URL: logged, not sent)')
          return { messageId: info.messageId }
        },
      })
    }
  },
  { name: 'mail', dependencies: ['config'] },
)
