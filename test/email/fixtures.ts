import { v7 as uuidv7 } from 'uuid'
import type { App } from '../../src/app.js'
import { newEmailRef } from '../../src/email/ref.js'
import { seedWorkspace, type SeededWorkspace } from '../helper.js'

export const SMTP_AUTH = { user: 'support', pass: 'smtp-pass-S3cret' }

/** POST /channels body of an e-mail channel whose SMTP is 127.0.0.1:`smtpPort` (IMAP unused here). */
export const emailChannelBody = (smtpPort: number, imapPort = 1) => ({
  name: 'Support mail',
  kind: 'email',
  email: {
    address: 'support@shop.example',
    fromName: 'Shop Support',
    imap: { host: '127.0.0.1', port: imapPort, secure: false, username: 'support', password: 'imap-pass-S3cret' },
    smtp: { host: '127.0.0.1', port: smtpPort, secure: false, username: SMTP_AUTH.user, password: SMTP_AUTH.pass },
  },
})

/** Who creates the channel: a seeded workspace, or any workspace and an admin's headers. */
type MailWorkspace = { workspaceId: string; admin: { headers: Record<string, string> } }

export interface MailThread<W extends MailWorkspace = SeededWorkspace> {
  ws: W
  channelId: string
  guestId: string
  conversationId: string
  ref: string
  /** The inbound mail's Message-ID and References (as the IMAP reader stores them). */
  inboundHeader: string
  inboundReferences: string[]
}

/**
 * An e-mail channel (through the API) with one conversation started by an inbound mail, stored as
 * the inbound half stores it: guest on the channel, subject and ref on the conversation, a GUEST
 * message with its 'in' row in message_emails.
 */
export async function mailThread(app: App, smtpPort: number): Promise<MailThread>
export async function mailThread<W extends MailWorkspace>(app: App, smtpPort: number, ws: W): Promise<MailThread<W>>
export async function mailThread(app: App, smtpPort: number, given?: MailWorkspace): Promise<MailThread<MailWorkspace>> {
  const ws = given ?? (await seedWorkspace(app))
  const res = await app.inject({ method: 'POST', url: '/channels', headers: ws.admin.headers, payload: emailChannelBody(smtpPort) })
  if (res.statusCode !== 201) throw new Error(res.body)
  const channelId = res.json().id as string
  const { sql } = app.deps
  const guestId = uuidv7()
  await sql`INSERT INTO guests (id, workspace_id, channel_id, name, email) VALUES (${guestId}, ${ws.workspaceId}, ${channelId}, 'Gina Guest', 'gina@example.test')`
  const conversationId = uuidv7()
  const ref = newEmailRef()
  await sql`
    INSERT INTO conversations (id, workspace_id, channel_id, guest_id, subject, email_ref, unread_count)
    VALUES (${conversationId}, ${ws.workspaceId}, ${channelId}, ${guestId}, 'Re: Order #123 never arrived', ${ref}, 0)`
  const messageId = uuidv7()
  await sql`
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body)
    VALUES (${messageId}, ${ws.workspaceId}, ${conversationId}, 'GUEST', ${guestId}, 'Gina Guest', 'Where is my order?')`
  const inboundHeader = `in-${messageId}@guest.example`
  const inboundReferences = ['first@shop.example']
  await sql`
    INSERT INTO message_emails (message_id, workspace_id, channel_id, conversation_id, direction, message_id_header, in_reply_to, "references")
    VALUES (${messageId}, ${ws.workspaceId}, ${channelId}, ${conversationId}, 'in', ${inboundHeader}, 'first@shop.example', ${inboundReferences}::text[])`
  await sql`UPDATE conversations SET last_message_at = now() WHERE id = ${conversationId}`
  return { ws, channelId, guestId, conversationId, ref, inboundHeader, inboundReferences }
}

export async function delivery(app: App, messageId: string) {
  const [row] = await app.deps.sql<{ status: string | null; error: string | null }[]>`
    SELECT delivery_status AS status, delivery_error AS error FROM messages WHERE id = ${messageId}`
  return row
}

export async function outHeader(app: App, messageId: string): Promise<string> {
  const [row] = await app.deps.sql<{ h: string }[]>`SELECT message_id_header AS h FROM message_emails WHERE message_id = ${messageId} AND direction = 'out'`
  return row!.h
}
