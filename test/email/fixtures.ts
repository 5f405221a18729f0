import type { App } from '../../src/app.js'
import { build, seedWorkspace, type SeededWorkspace, type TestContext } from '../helper.js'
import { startDovecot, type Dovecot } from '../support/dovecot.js'
import { waitFor } from '../support/processes.js'

/** Fast lease rounds and polls for tests; the defaults are 30 s and 8 s. */
export const FAST_READER_ENV = { EMAIL_POLL_MS: '300', EMAIL_LEASE_MS: '3000' }

export const CHANNEL_ADDRESS = 'support@example.test'

export interface MailRow {
  id: string
  conversationId: string
  senderType: string
  senderId: string | null
  senderName: string
  body: string
  private: boolean
}

export interface ConversationRow {
  id: string
  guestId: string
  status: string
  subject: string | null
  emailRef: string | null
  teamId: string | null
}

/** Creates an e-mail channel through the API, reading the Dovecot mailbox. */
export async function createEmailChannel(app: App, ws: SeededWorkspace, dv: Dovecot): Promise<string> {
  const imap = dv.imap()
  const res = await app.inject({
    method: 'POST',
    url: '/channels',
    headers: ws.admin.headers,
    payload: {
      name: 'Support mail',
      kind: 'email',
      email: {
        address: CHANNEL_ADDRESS,
        fromName: 'Acme Support',
        imap: { ...imap },
        smtp: { host: '127.0.0.1', port: 2525, secure: false, username: imap.username, password: imap.password },
      },
    },
  })
  if (res.statusCode !== 201) throw new Error(`channel not created: ${res.statusCode} ${res.body}`)
  return res.json().id
}

/** Waits until some process has opened the channel's mailbox (its place is set). */
export async function readerReady(app: App, channelId: string, timeoutMs = 15_000): Promise<void> {
  await waitFor(async () => {
    const [row] = await app.deps.sql<{ lastUid: number | null }[]>`SELECT last_uid AS "lastUid" FROM email_mailboxes WHERE channel_id = ${channelId}`
    return row !== undefined && row.lastUid !== null
  }, timeoutMs, 100)
}

export async function conversationsOf(app: App, channelId: string): Promise<ConversationRow[]> {
  return app.deps.sql<ConversationRow[]>`
    SELECT id, guest_id AS "guestId", status, subject, email_ref AS "emailRef", team_id AS "teamId"
    FROM conversations WHERE channel_id = ${channelId} ORDER BY created_at, id`
}

export async function messagesOf(app: App, conversationId: string): Promise<MailRow[]> {
  return app.deps.sql<MailRow[]>`
    SELECT id, conversation_id AS "conversationId", sender_type AS "senderType", sender_id AS "senderId", sender_name AS "senderName", body, private
    FROM messages WHERE conversation_id = ${conversationId} ORDER BY created_at, id`
}

/** All inbound messages of the channel (one per imported mail), oldest first. */
export async function inboundOf(app: App, channelId: string): Promise<(MailRow & { header: string })[]> {
  return app.deps.sql<(MailRow & { header: string })[]>`
    SELECT m.id, m.conversation_id AS "conversationId", m.sender_type AS "senderType", m.sender_id AS "senderId", m.sender_name AS "senderName",
           m.body, m.private, me.message_id_header AS header
    FROM message_emails me JOIN messages m ON m.id = me.message_id
    WHERE me.channel_id = ${channelId} AND me.direction = 'in' ORDER BY me.created_at, m.id`
}

export interface EmailSetup {
  app: App
  databaseUrl: string
  ws: SeededWorkspace
  dv: Dovecot
  channelId: string
}

/** A Dovecot, an app with fast readers, a workspace and an e-mail channel whose reader is ready. */
export async function emailSetup(t: TestContext, env: Record<string, string> = {}): Promise<EmailSetup> {
  const dv = await startDovecot([{ user: CHANNEL_ADDRESS, pass: 'secret' }])
  t.teardown(() => dv.stop())
  const { app, databaseUrl } = await build(t, { env: { ...FAST_READER_ENV, ...env } })
  const ws = await seedWorkspace(app)
  const channelId = await createEmailChannel(app, ws, dv)
  await readerReady(app, channelId)
  return { app, databaseUrl, ws, dv, channelId }
}
