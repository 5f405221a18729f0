import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { v7 as uuidv7 } from 'uuid'
import type { ConversationView } from '../../schemas/conversations.js'
import { storageKey, storeFile, type StoredFile } from '../attachments/uploads.js'
import { ATTACHMENT_SELECT, toAttachmentView, type AttachmentRecord } from '../attachments/view.js'
import { contextFor, type Deps } from '../context.js'
import { lockCountersShared } from '../conversations/counters.js'
import { insertConversation } from '../conversations/lifecycle.js'
import { insertFirstGuestMessage, postMessage } from '../conversations/messages.js'
import { findConversationView, MESSAGE_COLUMNS, toMessageView, type MessageRecord } from '../conversations/view.js'
import { conversationRooms, publishNewMessage } from '../conversations/visibility.js'
import type { Sql } from '../db/client.js'
import { AppError, conversationNotFound } from '../errors.js'
import { MailParseError, parseMail, type InboundMail } from './parse.js'
import { newEmailRef, refOfSubject } from './ref.js'

/** The original mail kept for members (API.md section 19): up to 25 MiB, outside the type list. */
export const ORIGINAL_MAX_BYTES = 25 * 1024 * 1024
export const ORIGINAL_NAME = 'original.eml'
/** Message bodies are at most 10,000 characters (API.md section 1); a longer mail is cut there (the original keeps it all). */
export const BODY_MAX = 10_000

/** Where a reader is: its lease and the mailbox generation it imports into (src/email/reader.ts). */
export interface ReaderPlace {
  channelId: string
  workspaceId: string
  /** The channel's own address: a mail from it is Parley's own (a copy of a reply), never imported. */
  address: string
  holder: string
  uidValidity: number
}

export type ImportOutcome =
  | 'imported'
  | 'threaded'
  | 'duplicate'
  | 'automatic'
  | 'limited'
  | 'no-sender'
  | 'own'
  /** Not a mail Parley can store (unparsable, or data PostgreSQL refuses): logged as an error and skipped, so one bad mail never blocks the mailbox. */
  | 'rejected'
  /** The lease was lost before the commit: nothing was written; the new holder imports it. */
  | 'lease-lost'

/** The lease was lost (or the place moved) under an import: its transaction rolls back. */
class LeaseLost extends Error {}
/** The Message-ID arrived meanwhile (the unique index said so): the import rolls back. */
class Duplicate extends Error {}

/**
 * Moves the reader's place to `uid` inside the import's own transaction, only while this process
 * holds an unexpired lease on the same mailbox generation: a process that lost its lease (paused,
 * partitioned) can never commit an import, so each mail is imported by one holder at most and the
 * place never moves backwards.
 */
export async function advancePlace(sql: Sql, place: ReaderPlace, uid: number): Promise<void> {
  const moved = await sql`
    UPDATE email_mailboxes SET last_uid = ${uid}, updated_at = clock_timestamp()
    WHERE channel_id = ${place.channelId} AND holder = ${place.holder} AND lease_expires_at > clock_timestamp()
      AND uid_validity = ${place.uidValidity} AND last_uid < ${uid}`
  if (moved.count !== 1) throw new LeaseLost()
}

/** A file of the mail on its way in: stored before the transaction, recorded in it. */
interface PreparedFile {
  id: string
  key: string
  file: StoredFile
  private: boolean
}

/**
 * Imports the mail at `uid` (API.md section 19): parses it, decides its conversation (thread by
 * In-Reply-To/References, else by the subject's [#ref] when the sender is that conversation's
 * guest, else a new one within the sender's limits) and stores it through the same functions as
 * web chat (postMessage for a thread, insertConversation + insertFirstGuestMessage for a new
 * conversation), with the mail's headers, its files and the reader's place in that same
 * transaction. Mail that is not imported (a duplicate, an auto-reply or bounce, over the limits,
 * no sender, Parley's own) still moves the place, in a transaction of its own.
 */
export async function importMail(deps: Deps, place: ReaderPlace, uid: number, raw: Buffer): Promise<ImportOutcome> {
  try {
    return await importParsed(deps, place, uid, raw, await parseMail(raw))
  } catch (err) {
    // Deterministic refusals (the same mail would fail forever): a parse error, or PostgreSQL's
    // data exceptions (22xxx) and constraint violations (23xxx). Anything else (the database or
    // storage unreachable) propagates and the reader retries the same mail.
    const code = (err as { code?: unknown }).code
    const sqlData = typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code)
    if (!sqlData && !(err instanceof MailParseError)) throw err
    deps.log.error({ channelId: place.channelId, uid, err: { message: (err as Error).message, code } }, 'mail not imported: refused')
    return moveOnly(deps, place, uid, 'rejected')
  }
}

async function importParsed(deps: Deps, place: ReaderPlace, uid: number, raw: Buffer, mail: InboundMail): Promise<ImportOutcome> {
  const skip = async (outcome: ImportOutcome, why: string): Promise<ImportOutcome> => {
    deps.log.info({ channelId: place.channelId, uid, outcome }, `mail not imported: ${why}`)
    return moveOnly(deps, place, uid, outcome)
  }
  if (!mail.sender) return skip('no-sender', 'no sender address')
  if (mail.sender.email === place.address.toLowerCase()) return skip('own', 'sent from the channel address')
  // The cheap check first; the unique index settles a race (Duplicate below).
  if (await knownMessageId(deps.sql, place.channelId, mail.messageId)) return moveOnly(deps, place, uid, 'duplicate')
  // An auto-reply or bounce never starts a conversation, and one that would thread is dropped too.
  if (mail.automatic) return skip('automatic', 'an auto-reply or bounce')

  const sender = mail.sender
  const thread = await threadOf(deps.sql, place.channelId, mail)
  const guest = await guestFor(deps.sql, place, sender)
  let target = thread
  if (!target) {
    const ref = refOfSubject(mail.subject)
    if (ref) target = await refConversation(deps.sql, place.channelId, ref, guest.id)
  }
  const files = await prepareFiles(deps, place.workspaceId, raw, mail)
  try {
    return target ? await joinConversation(deps, place, uid, mail, files, target, guest) : await startConversation(deps, place, uid, mail, files, guest)
  } catch (err) {
    await Promise.all(files.stored.map((f) => deps.storage.delete(f.key).catch(() => {})))
    if (err instanceof LeaseLost) return 'lease-lost'
    if (err instanceof Duplicate) return moveOnly(deps, place, uid, 'duplicate')
    throw err
  }
}

async function moveOnly(deps: Deps, place: ReaderPlace, uid: number, outcome: ImportOutcome): Promise<ImportOutcome> {
  try {
    await deps.sql.begin((tx) => advancePlace(tx, place, uid))
    return outcome
  } catch (err) {
    if (err instanceof LeaseLost) return 'lease-lost'
    throw err
  }
}

async function knownMessageId(sql: Sql, channelId: string, messageId: string): Promise<boolean> {
  const [row] = await sql`SELECT 1 FROM message_emails WHERE channel_id = ${channelId} AND message_id_header = ${messageId}`
  return row !== undefined
}

interface Target {
  id: string
  guestId: string
}

/**
 * The conversation a reply belongs to: the one holding a mail of this channel (sent or received)
 * that In-Reply-To names, else the newest one References names (message_emails_header_uq).
 */
async function threadOf(sql: Sql, channelId: string, mail: InboundMail): Promise<Target | null> {
  const named = [...new Set([...(mail.inReplyTo ? [mail.inReplyTo] : []), ...[...mail.references].reverse()])].slice(0, 100)
  if (named.length === 0) return null
  const [row] = await sql<Target[]>`
    SELECT c.id, c.guest_id AS "guestId" FROM message_emails me JOIN conversations c ON c.id = me.conversation_id
    WHERE me.channel_id = ${channelId} AND me.message_id_header = ANY(${named}::text[]) AND c.deleted_at IS NULL
    ORDER BY array_position(${named}::text[], me.message_id_header)
    LIMIT 1`
  return row ?? null
}

/** The live conversation of this channel carrying `ref`, only when `guestId` is its guest. */
async function refConversation(sql: Sql, channelId: string, ref: string, guestId: string): Promise<Target | null> {
  const [row] = await sql<Target[]>`
    SELECT id, guest_id AS "guestId" FROM conversations
    WHERE channel_id = ${channelId} AND email_ref = ${ref} AND guest_id = ${guestId} AND deleted_at IS NULL`
  return row ?? null
}

interface Guest {
  id: string
  name: string
}

/**
 * The sender's guest on this channel: the oldest guest with that address (lower-cased), else a
 * new one (`name` from the display name, or the address when there is none; `verified: false`).
 * Only this channel's reader creates its guests (one holder at a time), so no race makes two.
 */
async function guestFor(sql: Sql, place: ReaderPlace, sender: { email: string; name: string }): Promise<Guest> {
  const [found] = await sql<Guest[]>`
    SELECT id, name FROM guests WHERE channel_id = ${place.channelId} AND lower(email) = ${sender.email}
    ORDER BY created_at, id LIMIT 1`
  if (found) return found
  const name = (sender.name || sender.email).slice(0, 200)
  const [made] = await sql<Guest[]>`
    INSERT INTO guests (id, workspace_id, channel_id, name, email, verified)
    VALUES (${uuidv7()}, ${place.workspaceId}, ${place.channelId}, ${name}, ${sender.email}, false)
    RETURNING id, name`
  return made!
}

/**
 * The mail's files, stored before the transaction: original.eml (members only, up to 25 MiB)
 * and each attachment under the member size limit and type rules of uploads (storeFile). A file
 * refused by those rules is skipped and named in `refused` (a SYSTEM note says so); storage
 * being down fails the whole import, which the reader retries.
 */
async function prepareFiles(deps: Deps, workspaceId: string, raw: Buffer, mail: InboundMail): Promise<{ stored: PreparedFile[]; refused: string[] }> {
  const ctx = contextFor(deps, { kind: 'system' })
  const stored: PreparedFile[] = []
  const refused: string[] = []
  try {
    if (raw.length <= ORIGINAL_MAX_BYTES) {
      const id = uuidv7()
      const key = storageKey(workspaceId, id)
      await deps.storage.put(key, Readable.from([raw]), 'message/rfc822')
      const file: StoredFile = {
        filename: ORIGINAL_NAME,
        contentType: 'message/rfc822',
        size: raw.length,
        sha256: createHash('sha256').update(raw).digest('hex'),
        width: null,
        height: null,
        thumbRefusal: null,
      }
      stored.push({ id, key, file, private: true })
    } else {
      refused.push(`${ORIGINAL_NAME} (the mail is larger than 25 MiB)`)
    }
    for (const a of mail.attachments) {
      const id = uuidv7()
      const key = storageKey(workspaceId, id)
      try {
        const file = await storeFile(ctx, key, { filename: a.filename ?? 'attachment', declaredType: a.contentType, stream: Readable.from([a.content]) }, deps.config.UPLOAD_MAX_BYTES)
        stored.push({ id, key, file, private: false })
      } catch (err) {
        if (!(err instanceof AppError) || err.statusCode >= 500) throw err
        refused.push(`${a.filename ?? 'an attachment'} (${err.message})`)
      }
    }
  } catch (err) {
    await Promise.all(stored.map((f) => deps.storage.delete(f.key).catch(() => {})))
    throw err
  }
  return { stored, refused }
}

/** The message's body: the text without its history, at most BODY_MAX; never empty. */
function bodyOf(mail: InboundMail, from: string | null): string {
  const text = mail.body.trim() || mail.subject || '(no text)'
  const withFrom = from ? `${from}\n\n${text}` : text
  return withFrom.length > BODY_MAX ? withFrom.slice(0, BODY_MAX - 1) + '…' : withFrom
}

/** What one import writes beside the message, in its transaction: place, headers, files, note. */
async function recordMail(
  sql: Sql,
  place: ReaderPlace,
  uid: number,
  mail: InboundMail,
  files: { stored: PreparedFile[]; refused: string[] },
  message: { id: string; conversationId: string },
): Promise<{ attached: AttachmentRecord[]; note: MessageRecord | null }> {
  await advancePlace(sql, place, uid)
  const headers = await sql`
    INSERT INTO message_emails (message_id, workspace_id, channel_id, conversation_id, direction, message_id_header, in_reply_to, "references")
    VALUES (${message.id}, ${place.workspaceId}, ${place.channelId}, ${message.conversationId}, 'in', ${mail.messageId}, ${mail.inReplyTo}, ${mail.references}::text[])
    ON CONFLICT (channel_id, message_id_header) DO NOTHING`
  if (headers.count !== 1) throw new Duplicate()
  const attached: AttachmentRecord[] = []
  for (const f of files.stored) {
    const [row] = await sql<AttachmentRecord[]>`
      INSERT INTO attachments AS a (id, workspace_id, conversation_id, message_id, uploader_type, uploader_id, filename, content_type, size, sha256,
                                    width, height, storage_key, thumb_refusal, private, attached_at)
      SELECT ${f.id}, ${place.workspaceId}, ${message.conversationId}, ${message.id}, m.sender_type, m.sender_id, ${f.file.filename}, ${f.file.contentType},
             ${f.file.size}, ${f.file.sha256}, ${f.file.width}, ${f.file.height}, ${f.key}, ${f.file.thumbRefusal}, ${f.private}, clock_timestamp()
      FROM messages m WHERE m.id = ${message.id}
      RETURNING ${sql.unsafe(ATTACHMENT_SELECT)}`
    attached.push(row!)
  }
  let note: MessageRecord | null = null
  if (files.refused.length > 0) {
    // A SYSTEM note for the team (members only, like the wake-up note): what the mail carried but Parley did not keep.
    const body = `Not imported from this e-mail: ${files.refused.join('; ')}`.slice(0, BODY_MAX)
    const [row] = await sql<MessageRecord[]>`
      INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, private, created_at)
      VALUES (${uuidv7()}, ${place.workspaceId}, ${message.conversationId}, 'SYSTEM', NULL, 'Parley', ${body}, true, clock_timestamp())
      RETURNING ${sql.unsafe(MESSAGE_COLUMNS)}`
    note = row!
  }
  return { attached, note }
}

/** A reply (or a [#ref] mail): postMessage as the conversation's guest, the mail recorded in its transaction. */
async function joinConversation(
  deps: Deps,
  place: ReaderPlace,
  uid: number,
  mail: InboundMail,
  files: { stored: PreparedFile[]; refused: string[] },
  target: Target,
  sender: Guest,
): Promise<ImportOutcome> {
  // A conversation has one guest: a reply from someone else in the thread (a colleague in Cc) is
  // posted as the guest's message, and says who wrote it.
  const from = sender.id === target.guestId ? null : `From: ${mail.sender!.name ? `${mail.sender!.name} <${mail.sender!.email}>` : mail.sender!.email}`
  const ctx = contextFor(deps, { kind: 'visitor', workspaceId: place.workspaceId, guestId: target.guestId, channelId: place.channelId })
  const written: { note: MessageRecord | null } = { note: null }
  const out = await postMessage(ctx, target.id, { body: bodyOf(mail, from) }, async (sql, message) => {
    const r = await recordMail(sql, place, uid, mail, files, { id: message.id, conversationId: message.conversationId })
    written.note = r.note
    return r.attached
  })
  if (written.note) await publishNote(deps, target.id, written.note)
  return out.created ? 'threaded' : 'duplicate'
}

/** A new conversation with its subject and a fresh [#ref], under the sender's limits. */
async function startConversation(
  deps: Deps,
  place: ReaderPlace,
  uid: number,
  mail: InboundMail,
  files: { stored: PreparedFile[]; refused: string[] },
  guest: Guest,
): Promise<ImportOutcome> {
  const id = uuidv7()
  const v = { workspaceId: place.workspaceId, channelId: place.channelId, guestId: guest.id }
  const limit = deps.config.VISITOR_CONVERSATIONS_PER_HOUR
  const out = await deps.sql.begin(async (tx) => {
    await lockCountersShared(tx, v.workspaceId)
    // The per-sender limit is a count about data (the guest is the sender's address on this channel).
    const [recent] = await tx<{ n: number }[]>`
      SELECT count(*)::int AS n FROM (
        SELECT 1 FROM conversations WHERE guest_id = ${guest.id} AND created_at > clock_timestamp() - interval '1 hour' LIMIT ${limit}
      ) r`
    if (recent!.n >= limit) return null
    let created
    try {
      created = await tx.savepoint((sp) => insertConversation(sp, v, id, deps.config.VISITOR_OPEN_CONVERSATIONS_MAX, { subject: mail.subject || null, ref: newEmailRef() }))
    } catch (err) {
      // At the sender's cap of open conversations (409): nothing starts, like over the hourly limit.
      if (err instanceof AppError && err.statusCode === 409) return null
      throw err
    }
    const message = await insertFirstGuestMessage(tx, { id, ...v, ...created }, guest.name, bodyOf(mail, null))
    const r = await recordMail(tx, place, uid, mail, files, { id: message.id, conversationId: id })
    const conversation = await findConversationView(tx, id)
    if (!conversation) throw conversationNotFound()
    return { conversation, message, ...r }
  })
  if (!out) {
    await Promise.all(files.stored.map((f) => deps.storage.delete(f.key).catch(() => {})))
    deps.log.warn({ channelId: place.channelId, uid, guestId: guest.id }, 'mail not imported: the sender is over its conversation limits')
    return moveOnly(deps, place, uid, 'limited')
  }
  await publishStarted(deps, out.conversation, out.message, out.attached)
  if (out.note) await publishNote(deps, id, out.note)
  return 'imported'
}

async function publishStarted(deps: Deps, conversation: ConversationView, message: MessageRecord, attached: AttachmentRecord[]): Promise<void> {
  const c = { id: conversation.id, workspaceId: conversation.workspaceId, guestId: conversation.guestId, teamId: conversation.teamId }
  deps.events.publish(await conversationRooms(deps.sql, c), 'conversation:updated', { conversation })
  await publishNewMessage(deps, c, toMessageView(message, attached.map((f) => toAttachmentView(f))), attached)
  deps.routing.teams([conversation.teamId])
}

async function publishNote(deps: Deps, conversationId: string, note: MessageRecord): Promise<void> {
  const [c] = await deps.sql<{ workspaceId: string; guestId: string; teamId: string | null }[]>`
    SELECT workspace_id AS "workspaceId", guest_id AS "guestId", team_id AS "teamId" FROM conversations WHERE id = ${conversationId}`
  if (c) await publishNewMessage(deps, { id: conversationId, ...c }, toMessageView(note), [])
}
