import type { ConversationView } from '../../schemas/conversations.js'
import type { TranscriptFormatName } from '../../schemas/transcripts.js'
import type { Ctx } from '../context.js'
import { findConversationForCaller } from '../conversations/access.js'
import type { Sql } from '../db/client.js'
import { conversationNotFound } from '../errors.js'
import { iso } from '../time.js'
import { findConversationView, MESSAGE_COLUMNS, toMessageView, type MessageRecord } from '../conversations/view.js'
import { audienceOf, conversationFor, visibleMessages, type Audience } from '../conversations/visibility.js'
import { escapeHtml } from '../html.js'
import type { Config } from '../config.js'
import { attachmentsOfMessages, toAttachmentView } from '../attachments/view.js'
import { TRANSCRIPT_LINK_TTL_S } from '../attachments/links.js'
import type { AttachmentView } from '../../schemas/attachments.js'

type TranscriptFormat = TranscriptFormatName

export const CONTENT_TYPES: Record<TranscriptFormat, string> = {
  txt: 'text/plain; charset=utf-8',
  json: 'application/json; charset=utf-8',
  html: 'text/html; charset=utf-8',
}

/**
 * GET /conversations/:id/download: the transcript of a conversation the caller may see, as a
 * file name, a content type and the text chunks to stream.
 */
export async function transcriptFile(ctx: Ctx, id: string, format: TranscriptFormat) {
  const row = await findConversationForCaller(ctx, id)
  const conversation = await findConversationView(ctx.sql, row.id)
  if (!conversation) throw conversationNotFound()
  return {
    filename: `transcript-${conversation.id}.${format}`,
    contentType: CONTENT_TYPES[format],
    chunks: renderTranscript(ctx.sql, conversation, format, audienceOf(ctx.caller), undefined, ctx.config),
  }
}

/** Messages read per query: one batch is the most a transcript ever holds in memory. */
export const TRANSCRIPT_BATCH = 1000

/**
 * All messages of a conversation in order, read in keyset batches over
 * messages_conversation_idx (conversation_id, created_at, id). Each batch is its own short
 * query, so a slow reader never pins a pooled connection; the key is the raw timestamptz text
 * (microseconds kept), so no message is skipped or repeated between batches. Private notes only
 * for the members' audience.
 */
export async function* messageBatches(
  sql: Sql,
  conversationId: string,
  audience: Audience,
  batch = TRANSCRIPT_BATCH,
): AsyncGenerator<MessageRecord[]> {
  let after: { t: string; id: string } | null = null
  for (;;) {
    const rows: MessageRecord[] = await sql<MessageRecord[]>`
      SELECT ${sql.unsafe(MESSAGE_COLUMNS)}
      FROM messages
      WHERE conversation_id = ${conversationId} ${visibleMessages(sql, audience)}
        ${after ? sql`AND (created_at, id) > (${after.t}::timestamptz, ${after.id}::uuid)` : sql``}
      ORDER BY created_at, id
      LIMIT ${batch}`
    if (rows.length === 0) return
    yield rows
    if (rows.length < batch) return
    const last = rows[rows.length - 1]!
    after = { t: last.createdAt, id: last.id }
  }
}

/** One line for names in the text format: a name cannot fake a new message line. */
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim()

const senderLabel = (m: MessageRecord) =>
  m.senderType === 'GUEST' ? 'guest' : m.senderType === 'AGENT' ? (m.private ? 'agent, internal note' : 'agent') : 'system'

/**
 * The transcript as a sequence of text chunks (one per batch of messages), for a streamed
 * response or a streamed mail part. `exportedAt` is passed in so both mail parts agree. A
 * members' transcript includes private notes, marked as internal; any other audience (a visitor,
 * every e-mail) never sees them.
 */
export async function* renderTranscript(
  sql: Sql,
  conversation: ConversationView,
  format: TranscriptFormat,
  audience: Audience,
  exportedAt = new Date().toISOString(),
  config?: Config,
): AsyncGenerator<string> {
  // Outside the workspace (a visitor, any mailed transcript) labels and priority read as none.
  const c = conversationFor(conversation, audience)
  // Files are listed by name with a link signed for 7 days (absolute under API_URL).
  const filesOf = async (batch: MessageRecord[]) => {
    const byMessage = await attachmentsOfMessages(sql, batch.map((m) => m.id), audience)
    return (m: MessageRecord): AttachmentView[] =>
      (byMessage.get(m.id) ?? []).map((f) => {
        const v = config ? toAttachmentView(f, { config, ttlS: TRANSCRIPT_LINK_TTL_S }) : toAttachmentView(f)
        return config ? { ...v, url: new URL(v.url, config.API_URL).toString() } : v
      })
  }
  if (format === 'txt') {
    yield [
      `Transcript of conversation ${c.id}`,
      `Guest: ${oneLine(c.guest.name)}${c.guest.email ? ` <${oneLine(c.guest.email)}>` : ''}`,
      `Started: ${c.createdAt}`,
      `Status: ${c.status}`,
      `Exported: ${exportedAt}`,
      '',
      '',
    ].join('\n')
    for await (const batch of messageBatches(sql, c.id, audience)) {
      const files = await filesOf(batch)
      yield batch
        .map((m) => {
          // Continuation lines are indented, so every message line starts with its timestamp.
          const body = m.body.replace(/\r\n?/g, '\n').split('\n').join('\n    ')
          const attached = files(m).map((f) => `\n    [file] ${oneLine(f.filename)} <${f.url}>`).join('')
          return `[${iso(m.createdAt)}] ${oneLine(m.senderName)} (${senderLabel(m)}): ${body}${attached}\n`
        })
        .join('')
    }
    return
  }
  if (format === 'json') {
    yield `{"conversation":${JSON.stringify(c)},"exportedAt":${JSON.stringify(exportedAt)},"messages":[`
    let first = true
    for await (const batch of messageBatches(sql, c.id, audience)) {
      const files = await filesOf(batch)
      const items = batch.map((m) => JSON.stringify(toMessageView(m, files(m)))).join(',\n')
      yield (first ? '\n' : ',\n') + items
      first = false
    }
    yield '\n]}\n'
    return
  }
  const title = `Transcript of conversation ${c.id}`
  yield `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:48rem;margin:2rem auto;padding:0 1rem;color:#222}
ol{list-style:none;padding:0}li{margin:.75rem 0;padding:.5rem .75rem;border-radius:.5rem;background:#f3f4f6}
li.agent{background:#e0ecff}li.note{background:#fff7d6;border:1px dashed #c9a400}li.system{background:#fff;color:#666;font-style:italic}
.meta{font-size:.8rem;color:#555}.body{white-space:pre-wrap;overflow-wrap:anywhere}
</style></head><body>
<h1>${escapeHtml(title)}</h1>
<p>Guest: ${escapeHtml(c.guest.name)}${c.guest.email ? ` &lt;${escapeHtml(c.guest.email)}&gt;` : ''}<br>
Started: <time datetime="${c.createdAt}">${c.createdAt}</time><br>Status: ${escapeHtml(c.status)}<br>
Exported: <time datetime="${exportedAt}">${exportedAt}</time></p>
<ol class="messages">
`
  for await (const batch of messageBatches(sql, c.id, audience)) {
    const files = await filesOf(batch)
    yield batch
      .map((m) => {
        const at = iso(m.createdAt)
        const cls = m.private ? 'agent note' : senderLabel(m)
        const mark = m.private ? ' · <strong>Internal note</strong>' : ''
        const attached = files(m).map((f) => `<div class="file"><a href="${escapeHtml(f.url)}">${escapeHtml(f.filename)}</a></div>`).join('')
        return `<li class="${cls}"><div class="meta"><span class="sender">${escapeHtml(m.senderName)}</span>${mark} · <time datetime="${at}">${at}</time></div><div class="body">${escapeHtml(m.body)}</div>${attached}</li>\n`
      })
      .join('')
  }
  yield '</ol>\n</body></html>\n'
}
