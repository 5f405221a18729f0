import type { AttachmentView } from '../../schemas/attachments.js'
import type { Ctx } from '../context.js'
import { keysetPage, type Page } from '../cursor.js'
import { findConversationForCaller } from '../conversations/access.js'
import { audienceOf, visibleMessages } from '../conversations/visibility.js'
import type { Sql } from '../db/client.js'
import { invalidAttachment } from '../errors.js'
import { ATTACHMENT_SELECT, toAttachmentView, type AttachmentRecord } from './view.js'

/**
 * GET /conversations/:id/attachments: the conversation's attached files, newest attached first,
 * keyset on (attached_at, id) over attachments_files_idx. A visitor never sees a private note's
 * files.
 */
export async function listAttachments(
  ctx: Ctx,
  id: string,
  query: { limit: number; cursor?: string },
): Promise<Page<AttachmentView>> {
  const conv = await findConversationForCaller(ctx, id)
  const { sql } = ctx
  const page = await keysetPage(ctx, {
    cursor: query.cursor,
    params: { list: 'attachments', conversationId: conv.id },
    key: ['timestamp', 'uuid'],
    limit: query.limit,
    fetch: (before, take) => sql<AttachmentRecord[]>`
      SELECT ${sql.unsafe(ATTACHMENT_SELECT)} FROM attachments a
      WHERE a.conversation_id = ${conv.id} AND a.message_id IS NOT NULL
        ${visibleMessages(sql, audienceOf(ctx.caller))}
        ${before ? sql`AND (a.attached_at, a.id) < (${before[0]}::timestamptz, ${before[1]}::uuid)` : sql``}
      ORDER BY a.attached_at DESC, a.id DESC
      LIMIT ${take}`,
    keyOf: (a) => [a.attachedAt!, a.id],
  })
  return { data: page.data.map((r) => toAttachmentView(r)), nextCursor: page.nextCursor }
}

/**
 * Attaches `ids` to a new message inside its transaction (postMessage): each must be a pending
 * upload of the same conversation by the same sender, else 400 INVALID_ATTACHMENT and the
 * transaction (message included) rolls back. The rows are locked, so two messages naming the
 * same upload at once cannot both take it.
 */
export async function attachToMessage(
  sql: Sql,
  input: { ids: string[]; conversationId: string; messageId: string; uploaderType: 'GUEST' | 'AGENT'; uploaderId: string; private: boolean },
): Promise<AttachmentRecord[]> {
  const ids = [...new Set(input.ids.map((i) => i.toLowerCase()))]
  if (ids.length === 0) return []
  const rows = await sql<AttachmentRecord[]>`
    UPDATE attachments a SET message_id = ${input.messageId}, attached_at = clock_timestamp(), private = ${input.private}
    WHERE a.id = ANY(${ids}::uuid[]) AND a.conversation_id = ${input.conversationId} AND a.message_id IS NULL
      AND a.uploader_type = ${input.uploaderType} AND a.uploader_id = ${input.uploaderId} AND a.purge_at IS NULL
    RETURNING ${sql.unsafe(ATTACHMENT_SELECT)}`
  if (rows.length !== ids.length) throw invalidAttachment()
  return rows.sort((a, b) => (a.id < b.id ? -1 : 1))
}
