import { v7 as uuidv7 } from 'uuid'
import type { App } from '../../src/app.js'
import { newEmailRef } from '../../src/email/ref.js'
import { spawn } from 'node:child_process'
import { build, seedWorkspace, testEnv, type SeededWorkspace, type TestContext } from '../helper.js'
import { startDovecot, type Dovecot } from '../support/dovecot.js'
import { freePort, waitFor } from '../support/processes.js'

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

// Inbound (a real Dovecot, test/email/inbound*.test.ts).

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

const root = new URL('../..', import.meta.url).pathname

/**
 * A server process of its own (`src/server.ts`) on the test's database, started before any
 * in-process reader so that it holds the channel's mailbox once `readerReady` says so; the test's
 * teardown kills it. `kill` is the crash the takeover tests need (SIGKILL, then its exit).
 */
export async function readerProcess(
  t: { teardown: (fn: () => void) => void },
  app: App,
  databaseUrl: string,
  channelId: string,
  prefix: string,
): Promise<{ pid: number; kill: () => Promise<void> }> {
  const port = await freePort()
  const env = testEnv({ ...FAST_READER_ENV, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', REDIS_PREFIX: `t:${prefix}${port}:` })
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], { cwd: root, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (c) => (out += c))
  child.stderr.on('data', (c) => (out += c))
  const exited = new Promise<void>((r) => child.once('exit', () => r()))
  t.teardown(() => {
    child.kill('SIGKILL')
  })
  // 60 s: the child compiles src/ with tsx at start, slow when test files run side by side.
  await readerReady(app, channelId, 60_000).catch((err: Error) => {
    throw new Error(`${err.message}\n${out}`)
  })
  return {
    pid: child.pid!,
    kill: async () => {
      child.kill('SIGKILL')
      await exited
    },
  }
}

/**
 * An e-mail channel whose in-process reader opened the mailbox (its UIDVALIDITY and place stored)
 * and was then stopped: the test imports by hand under a holder name of its own (`place`).
 */
export async function stoppedReader(t: TestContext, holder: string) {
  const dv = await startDovecot([{ user: CHANNEL_ADDRESS, pass: 'secret' }])
  t.teardown(() => dv.stop())
  const { app } = await build(t, { env: FAST_READER_ENV })
  const ws = await seedWorkspace(app)
  const channelId = await createEmailChannel(app, ws, dv)
  await readerReady(app, channelId)
  await app.deps.mailReaders.stop()
  const [row] = await app.deps.sql<{ uidValidity: string; lastUid: string }[]>`
    SELECT uid_validity AS "uidValidity", last_uid AS "lastUid" FROM email_mailboxes WHERE channel_id = ${channelId}`
  const place = { channelId, workspaceId: ws.workspaceId, address: CHANNEL_ADDRESS, holder, uidValidity: Number(row!.uidValidity) }
  return { app, ws, channelId, place, lastUid: Number(row!.lastUid) }
}
