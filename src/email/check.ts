import type { Ctx } from '../context.js'
import { memberOf } from '../context.js'
import { badRequest, channelNotFound } from '../errors.js'
import { isUuid } from '../uuid.js'
import { channelMailSettings, type ChannelMailSettings } from './secrets.js'
import { channelTransport, mailErrorText } from './transport.js'

/** Each server's budget: the answer comes within it (API.md: under 15 seconds), both run at once. */
export const CHECK_TIMEOUT_MS = 10_000

/** Runs `work` and settles within `ms`, calling `abort` when the time is up. */
async function within<T>(ms: number, work: Promise<T>, abort: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort()
      reject(new Error(`no answer within ${ms / 1000} s`))
    }, ms)
  })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

/** Logs in to the IMAP server and looks the mailbox up; "ok" or the error. */
export async function checkImap(s: Pick<ChannelMailSettings, 'imap'>, timeoutMs = CHECK_TIMEOUT_MS): Promise<string> {
  const { ImapFlow } = await import('imapflow')
  const client = new ImapFlow({
    host: s.imap.host,
    port: s.imap.port,
    secure: s.imap.secure,
    auth: { user: s.imap.username, pass: s.imap.password },
    logger: false,
    disableAutoIdle: true,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
  })
  // A failure after the answer (the socket closing) must not become an unhandled 'error'.
  client.on('error', () => {})
  try {
    await within(
      timeoutMs,
      (async () => {
        await client.connect()
        await client.status(s.imap.mailbox, { uidNext: true })
        await client.logout()
      })(),
      () => client.close(),
    )
    return 'ok'
  } catch (err) {
    client.close()
    return mailErrorText(err)
  }
}

/** Connects and authenticates to the SMTP server (nodemailer's verify); "ok" or the error. */
export async function checkSmtp(s: Pick<ChannelMailSettings, 'smtp'>, timeoutMs = CHECK_TIMEOUT_MS): Promise<string> {
  const transport = await channelTransport(s, timeoutMs)
  try {
    await within(timeoutMs, transport.verify(), () => transport.close())
    return 'ok'
  } catch (err) {
    return mailErrorText(err)
  } finally {
    transport.close()
  }
}

/**
 * POST /channels/:id/email/check: both logins at once, the channel's `email.status` set from the
 * outcome (ok when both are; else the errors, each named by server).
 */
export async function checkEmailChannel(ctx: Ctx, id: string): Promise<{ imap: string; smtp: string }> {
  if (!isUuid(id)) throw channelNotFound()
  const { workspaceId } = memberOf(ctx)
  const [row] = await ctx.sql<{ kind: string }[]>`SELECT kind FROM channels WHERE id = ${id} AND workspace_id = ${workspaceId}`
  if (!row) throw channelNotFound()
  if (row.kind !== 'email') throw badRequest('This channel is not an e-mail channel')
  let settings: ChannelMailSettings | null
  try {
    settings = await channelMailSettings(ctx.sql, ctx.config, id)
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode) throw err
    // A password that no longer decrypts (CHANNEL_SECRET_KEY changed): said, not a 500.
    const msg = 'the stored passwords cannot be decrypted with CHANNEL_SECRET_KEY: set them again'
    await recordStatus(ctx, id, msg)
    return { imap: msg, smtp: msg }
  }
  if (!settings) throw channelNotFound()
  const [imap, smtp] = await Promise.all([checkImap(settings), checkSmtp(settings)])
  const errors = [imap === 'ok' ? null : `imap: ${imap}`, smtp === 'ok' ? null : `smtp: ${smtp}`].filter(Boolean)
  await recordStatus(ctx, id, errors.length ? errors.join('; ') : null)
  return { imap, smtp }
}

async function recordStatus(ctx: Ctx, id: string, error: string | null): Promise<void> {
  await ctx.sql`
    UPDATE channels SET email_state = ${error ? 'error' : 'ok'}, email_error = ${error}
    WHERE id = ${id} AND kind = 'email'`
}
