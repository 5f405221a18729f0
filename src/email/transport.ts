import type { ChannelMailSettings } from './secrets.js'

/**
 * A nodemailer transport over an e-mail channel's own SMTP server, with timeouts so an unreachable
 * server fails an attempt (or the check) in seconds. One per use: channels are many and sends
 * are few per channel, so no pool is kept. nodemailer is loaded on first use (layer rule 10).
 */
export async function channelTransport(s: Pick<ChannelMailSettings, 'smtp'>, timeoutMs: number) {
  const { default: nodemailer } = await import('nodemailer')
  return nodemailer.createTransport({
    host: s.smtp.host,
    port: s.smtp.port,
    secure: s.smtp.secure,
    auth: { user: s.smtp.username, pass: s.smtp.password },
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs * 3,
    // Never into a log: nodemailer's own logger would print the conversation.
    logger: false,
    debug: false,
  })
}

/**
 * An error of an IMAP or SMTP client as one short line for `email.status.error`, the check's
 * answer and `delivery.error`: what the server said, never the settings.
 */
export function mailErrorText(err: unknown): string {
  const e = err as { message?: string; code?: string; responseText?: string; response?: string; authenticationFailed?: boolean }
  let text = e.responseText ?? e.response ?? e.message ?? String(err)
  if (e.authenticationFailed && !/auth/i.test(text)) text = `authentication failed: ${text}`
  if (e.code && !text.includes(e.code)) text = `${e.code}: ${text}`
  return text.replace(/\s+/g, ' ').trim().slice(0, 500) || 'unknown error'
}
