import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { v7 as uuidv7 } from 'uuid'
import type { ConversationView } from '../../schemas/conversations.js'
import { storageKey, storeFile, type StoredFile } from '../attachments/uploads.js'
import { ATTACHMENT_SELECT, toAttachmentView, type AttachmentRecord } from '../attachments/view.js'
import { contextFor, type Ctx, type Deps } from '../context.js'
import type { PendingView } from '../conversations/batch.js'
import { lockCountersShared } from '../conversations/counters.js'
import { inOneTransaction, insertConversation } from '../conversations/lifecycle.js'
import { insertFirstGuestMessage, postMessage } from '../conversations/messages.js'
import { findConversationView, MESSAGE_COLUMNS, toMessageView, type MessageRecord } from '../conversations/view.js'
import { conversationRooms, publishNewMessage } from '../conversations/visibility.js'
import type { Sql } from '../db/client.js'
import { AppError, conversationNotFound } from '../errors.js'
import { MailParseError, parseMail, type InboundMail, type MailAddress } from './parse.js'
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
  /** False in a batch: the place moves once, at the batch's end (importBatch). */
  advance = true,
): Promise<{ attached: AttachmentRecord[]; note: MessageRecord | null }> {
  if (advance) await advancePlace(sql, place, uid)
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

/** A mail as the reader fetched it: its UID and its bytes (empty when it was expunged meanwhile). */
export interface FetchedMail {
  uid: number
  raw: Buffer
}

/** A batch's mails parsed (or why not), in its order. */
export type ParsedBatch = (InboundMail | MailParseError)[]

/**
 * Parses a batch's mails (CPU only, nothing written): the reader parses the next batch while the
 * current one's transaction runs (src/email/reader.ts).
 */
export async function parseBatch(mails: FetchedMail[]): Promise<ParsedBatch> {
  const out: ParsedBatch = []
  for (const m of mails) {
    try {
      out.push(await parseMail(m.raw))
    } catch (err) {
      if (!(err instanceof MailParseError)) throw err
      out.push(err)
    }
  }
  return out
}

/** A mail of a batch that may be stored: parsed, with its files once they are stored. */
interface Candidate {
  index: number
  uid: number
  raw: Buffer
  mail: InboundMail
  sender: MailAddress
  files: { stored: PreparedFile[]; refused: string[] }
}

/** Files are stored this many at a time before a batch's transaction. */
const FILE_WRITES = 8
/** A batch's mails are imported in at most this many concurrent lanes (importBatch). */
export const INGEST_LANES = 4

/**
 * The batch's mails in lanes: two mails share a lane when anything of one can change what the
 * other does: the same sender (its guest, its limits), the same conversation (a thread the
 * headers or a [#ref] name, or its guest), one naming the other's Message-ID (a reply within the
 * batch), the same Message-ID. Connected mails end up in one lane, in UID order; the groups are
 * spread over INGEST_LANES lanes.
 */
function lanesOf(live: Candidate[], threads: Map<string, Target>, byRef: Map<string, Target>, guests: Map<string, Guest>): Candidate[][] {
  const parent = new Map<string, string>()
  const find = (k: string): string => {
    let r = k
    while (parent.has(r) && parent.get(r) !== r) r = parent.get(r)!
    parent.set(k, r)
    return r
  }
  const union = (a: string, b: string) => {
    const ra = find(a)
    const rb = find(b)
    if (ra !== rb) parent.set(ra, rb)
  }
  const own = new Set(live.map((c) => c.mail.messageId))
  for (const c of live) {
    const me = `m:${c.mail.messageId}`
    find(me)
    union(me, `e:${c.sender.email}`)
    const guest = guests.get(c.sender.email)
    if (guest) union(me, `g:${guest.id}`)
    const targets: Target[] = []
    for (const h of namedIds(c.mail)) {
      if (own.has(h)) union(me, `m:${h}`)
      const t = threads.get(h)
      if (t) targets.push(t)
    }
    const ref = refOfSubject(c.mail.subject)
    const byIt = ref ? byRef.get(ref) : undefined
    if (byIt) targets.push(byIt)
    for (const t of targets) {
      union(me, `c:${t.id}`)
      union(me, `g:${t.guestId}`)
    }
  }
  const groups = new Map<string, Candidate[]>()
  for (const c of live) {
    const root = find(`m:${c.mail.messageId}`)
    const g = groups.get(root)
    if (g) g.push(c)
    else groups.set(root, [c])
  }
  const lanes: Candidate[][] = Array.from({ length: Math.max(1, Math.min(INGEST_LANES, groups.size)) }, () => [])
  let i = 0
  for (const g of groups.values()) lanes[i++ % lanes.length]!.push(...g)
  // Each lane in UID order (a group's mails keep theirs; groups are independent).
  for (const lane of lanes) lane.sort((a, b) => a.uid - b.uid)
  return lanes
}

/** The Message-IDs a mail names, in threading order: In-Reply-To, then References from the newest (at most 100). */
function namedIds(mail: InboundMail): string[] {
  return [...new Set([...(mail.inReplyTo ? [mail.inReplyTo] : []), ...[...mail.references].reverse()])].slice(0, 100)
}

/**
 * Imports a batch of mails, in UID order, in ONE transaction (docs/email.md "Inbound
 * throughput"): the same decisions and the same domain functions as importMail (postMessage for a
 * thread, insertConversation + insertFirstGuestMessage for a new conversation), joined to one
 * conversation batch (inOneTransaction, src/conversations/batch.ts) so counters and rollups are
 * written once before the commit and every event is published after it, in order. What can be
 * known before the transaction is read once for the whole batch: the parse, the Message-IDs
 * already stored, the threads the headers name, the [#ref] conversations, the senders' guests;
 * the files are stored before it. A mail threads into one stored earlier in the same batch. The
 * place moves once, to the batch's last UID, in the same transaction (fenced like every import):
 * the batch commits whole or not at all, so a restart neither skips nor repeats a mail.
 *
 * When the transaction fails for any reason but the lease (one mail's data PostgreSQL refuses, a
 * Message-ID stored meanwhile by a race), nothing of it is kept and the batch is imported again
 * one mail per transaction (importMail), which refuses the bad mail alone: the others are
 * imported once. The answer has one outcome per mail, fewer when the lease was lost on the way.
 */
export async function importBatch(deps: Deps, place: ReaderPlace, mails: FetchedMail[], parsedAhead?: ParsedBatch): Promise<ImportOutcome[]> {
  if (mails.length <= 1) return Promise.all(mails.map((m) => importMail(deps, place, m.uid, m.raw)))
  const outcomes: ImportOutcome[] = []
  const log = (i: number, outcome: ImportOutcome, why: string) => {
    outcomes[i] = outcome
    deps.log.info({ channelId: place.channelId, uid: mails[i]!.uid, outcome }, `mail not imported: ${why}`)
  }
  // Parsed before the transaction: CPU only, and a refused mail is known before anything is written.
  const parsed: Candidate[] = []
  const all = parsedAhead ?? (await parseBatch(mails))
  for (const [index, m] of mails.entries()) {
    const mail = all[index]!
    if (mail instanceof MailParseError) {
      deps.log.error({ channelId: place.channelId, uid: m.uid, err: { message: mail.message } }, 'mail not imported: refused')
      outcomes[index] = 'rejected'
      continue
    }
    if (!mail.sender) log(index, 'no-sender', 'no sender address')
    else if (mail.sender.email === place.address.toLowerCase()) log(index, 'own', 'sent from the channel address')
    else parsed.push({ index, uid: m.uid, raw: m.raw, mail, sender: mail.sender, files: { stored: [], refused: [] } })
  }
  const { sql } = deps
  const ids = parsed.map((c) => c.mail.messageId)
  const known = new Set(
    ids.length === 0
      ? []
      : (await sql<{ h: string }[]>`SELECT message_id_header AS h FROM message_emails WHERE channel_id = ${place.channelId} AND message_id_header = ANY(${ids}::text[])`).map((r) => r.h),
  )
  const live: Candidate[] = []
  for (const c of parsed) {
    if (known.has(c.mail.messageId)) outcomes[c.index] = 'duplicate'
    else if (c.mail.automatic) log(c.index, 'automatic', 'an auto-reply or bounce')
    else live.push(c)
  }
  // The threads the headers name, the [#ref] conversations and the senders' guests: one statement each.
  const named = [...new Set(live.flatMap((c) => namedIds(c.mail)))]
  const threads = new Map<string, Target>()
  if (named.length > 0) {
    const rows = await sql<(Target & { header: string })[]>`
      SELECT me.message_id_header AS header, c.id, c.guest_id AS "guestId" FROM message_emails me JOIN conversations c ON c.id = me.conversation_id
      WHERE me.channel_id = ${place.channelId} AND me.message_id_header = ANY(${named}::text[]) AND c.deleted_at IS NULL`
    for (const r of rows) threads.set(r.header, { id: r.id, guestId: r.guestId })
  }
  const refs = [...new Set(live.map((c) => refOfSubject(c.mail.subject)).filter((r): r is string => r !== null))]
  const byRef = new Map<string, Target>()
  if (refs.length > 0) {
    const rows = await sql<(Target & { ref: string })[]>`
      SELECT id, guest_id AS "guestId", email_ref AS ref FROM conversations
      WHERE channel_id = ${place.channelId} AND email_ref = ANY(${refs}::text[]) AND deleted_at IS NULL`
    for (const r of rows) byRef.set(r.ref, { id: r.id, guestId: r.guestId })
  }
  const emails = [...new Set(live.map((c) => c.sender.email))]
  const guests = new Map<string, Guest>()
  if (emails.length > 0) {
    // Each address's oldest guest on this channel (as guestFor).
    const rows = await sql<(Guest & { email: string })[]>`
      SELECT DISTINCT ON (lower(email)) lower(email) AS email, id, name FROM guests
      WHERE channel_id = ${place.channelId} AND lower(email) = ANY(${emails}::text[])
      ORDER BY lower(email), created_at, id`
    for (const r of rows) guests.set(r.email, { id: r.id, name: r.name })
  }
  const allFiles = () => live.flatMap((c) => c.files.stored)
  const dropFiles = (files: PreparedFile[]) => Promise.all(files.map((f) => deps.storage.delete(f.key).catch(() => {})))
  try {
    for (let i = 0; i < live.length; i += FILE_WRITES) {
      await Promise.all(live.slice(i, i + FILE_WRITES).map(async (c) => (c.files = await prepareFiles(deps, place.workspaceId, c.raw, c.mail))))
    }
  } catch (err) {
    await dropFiles(allFiles())
    throw err
  }

  const limit = deps.config.VISITOR_CONVERSATIONS_PER_HOUR
  const system = contextFor(deps, { kind: 'system' })
  try {
    await inOneTransaction(
      system,
      [],
      async (batchCtx) => {
        const batch = batchCtx.batch!
        const tx = batch.tx
        // New senders' guests, in one statement (only this channel's reader creates them).
        const missing = emails.filter((e) => !guests.has(e))
        if (missing.length > 0) {
          const names = missing.map((e) => {
            const c = live.find((x) => x.sender.email === e)!
            return (c.sender.name || e).slice(0, 200)
          })
          const made = await tx<(Guest & { email: string })[]>`
            INSERT INTO guests (id, workspace_id, channel_id, name, email, verified)
            SELECT g.id, ${place.workspaceId}, ${place.channelId}, g.name, g.email, false
            FROM unnest(${missing.map(() => uuidv7())}::uuid[], ${names}::text[], ${missing}::text[]) AS g(id, name, email)
            RETURNING id, name, email`
          for (const g of made) guests.set(g.email, { id: g.id, name: g.name })
        }
        // The per-sender limit: each sender's conversations of the last hour, one statement; the
        // conversations this batch starts are added as it goes.
        const guestIds = [...new Set(live.map((c) => guests.get(c.sender.email)!.id))]
        const recent = new Map<string, number>()
        for (const r of await tx<{ guestId: string; n: number }[]>`
          SELECT guest_id AS "guestId", count(*)::int AS n FROM conversations
          WHERE guest_id = ANY(${guestIds}::uuid[]) AND created_at > clock_timestamp() - interval '1 hour'
          GROUP BY guest_id`)
          recent.set(r.guestId, r.n)
        // Message-IDs stored by this batch so far, and their conversations: a later mail threads into them.
        const stored = new Map<string, Target>()
        const importOne = async (c: Candidate) => {
          if (stored.has(c.mail.messageId)) {
            outcomes[c.index] = 'duplicate'
            return
          }
          const guest = guests.get(c.sender.email)!
          let target: Target | null = null
          for (const h of namedIds(c.mail)) {
            target = stored.get(h) ?? threads.get(h) ?? null
            if (target) break
          }
          if (!target) {
            const ref = refOfSubject(c.mail.subject)
            const byIt = ref ? byRef.get(ref) : undefined
            if (byIt && byIt.guestId === guest.id) target = byIt
          }
          if (target) {
            await joinInBatch(deps, batchCtx, place, c, target, guest)
            outcomes[c.index] = 'threaded'
            stored.set(c.mail.messageId, target)
            return
          }
          const n = recent.get(guest.id) ?? 0
          const id = n >= limit ? null : await startInBatch(deps, batchCtx, place, c, guest)
          if (!id) {
            outcomes[c.index] = 'limited'
            deps.log.warn({ channelId: place.channelId, uid: c.uid, guestId: guest.id }, 'mail not imported: the sender is over its conversation limits')
            return
          }
          recent.set(guest.id, n + 1)
          outcomes[c.index] = 'imported'
          stored.set(c.mail.messageId, { id, guestId: guest.id })
        }
        // Lanes: mails that share nothing are imported concurrently on the batch's connection
        // (postgres.js pipelines their statements); each lane keeps UID order. Every lane ends
        // before the batch goes on: the first failure stops the others at their next mail, then
        // aborts the batch (nothing of a lane runs after the rollback).
        let failure: { err: unknown } | null = null
        await Promise.all(
          lanesOf(live, threads, byRef, guests).map(async (lane) => {
            for (const c of lane) {
              if (failure) return
              try {
                await importOne(c)
              } catch (err) {
                failure ??= { err }
                return
              }
            }
          }),
        )
        if (failure) throw (failure as { err: unknown }).err
        // The place, once, fenced like every import: the whole batch or none of it.
        await advancePlace(tx, place, mails[mails.length - 1]!.uid)
      },
      { workspaceId: place.workspaceId },
    )
  } catch (err) {
    await dropFiles(allFiles())
    if (err instanceof LeaseLost) return ['lease-lost']
    deps.log.warn(
      { channelId: place.channelId, uids: [mails[0]!.uid, mails[mails.length - 1]!.uid], err: { message: (err as Error).message } },
      'mail batch not imported in one transaction; importing its mails one by one',
    )
    const one: ImportOutcome[] = []
    for (const m of mails) {
      const o = await importMail(deps, place, m.uid, m.raw)
      one.push(o)
      if (o === 'lease-lost') break
    }
    return one
  }
  // Files of mails that were not stored after all (over the limits, the same Message-ID twice in the batch).
  await dropFiles(live.filter((c) => outcomes[c.index] !== 'imported' && outcomes[c.index] !== 'threaded').flatMap((c) => c.files.stored))
  return outcomes
}

/** joinConversation inside a batch: postMessage joins the batch's transaction; the events wait for its commit. */
async function joinInBatch(deps: Deps, batchCtx: Ctx, place: ReaderPlace, c: Candidate, target: Target, sender: Guest): Promise<void> {
  const { mail } = c
  const from = sender.id === target.guestId ? null : `From: ${c.sender.name ? `${c.sender.name} <${c.sender.email}>` : c.sender.email}`
  const ctx: Ctx = {
    ...contextFor(deps, { kind: 'visitor', workspaceId: place.workspaceId, guestId: target.guestId, channelId: place.channelId }),
    batch: batchCtx.batch,
  }
  let note: MessageRecord | null = null
  await postMessage(ctx, target.id, { body: bodyOf(mail, from) }, async (sql, message) => {
    const r = await recordMail(sql, place, c.uid, mail, c.files, { id: message.id, conversationId: message.conversationId }, false)
    note = r.note
    return r.attached
  })
  const written = note as MessageRecord | null
  if (written) batchCtx.batch!.after.push(() => publishNote(deps, target.id, written))
}

/**
 * startConversation inside a batch: the same functions in the batch's transaction, the counters
 * added to the batch's, the view read with the batch's others. Null: the sender is at its cap of
 * open conversations (checked before anything is written, so the batch goes on).
 */
async function startInBatch(deps: Deps, batchCtx: Ctx, place: ReaderPlace, c: Candidate, guest: Guest): Promise<string | null> {
  const batch = batchCtx.batch!
  const tx = batch.tx
  const id = uuidv7()
  const v = { workspaceId: place.workspaceId, channelId: place.channelId, guestId: guest.id }
  let created
  try {
    created = await insertConversation(tx, v, id, deps.config.VISITOR_OPEN_CONVERSATIONS_MAX, { subject: c.mail.subject || null, ref: newEmailRef() })
  } catch (err) {
    if (err instanceof AppError && err.statusCode === 409) return null
    throw err
  }
  const message = await insertFirstGuestMessage(tx, { id, ...v, ...created }, guest.name, bodyOf(c.mail, null), undefined, batch)
  const r = await recordMail(tx, place, c.uid, c.mail, c.files, { id: message.id, conversationId: id }, false)
  const view: PendingView = { row: { id } }
  batch.pending.push(view)
  batch.after.push(async () => {
    if (view.conversation) await publishStarted(deps, view.conversation, message, r.attached)
    if (r.note) await publishNote(deps, id, r.note)
  })
  return id
}
