import type { AttachmentView } from '../../schemas/attachments.js'
import type { Config } from '../config.js'
import type { Audience } from '../conversations/visibility.js'
import type { Sql } from '../db/client.js'
import type { attachments } from '../db/schema.js'
import { iso } from '../time.js'
import { signMediaToken } from './links.js'

/** The columns every attachment read selects, aliased to camelCase (table alias `a`). */
export const ATTACHMENT_SELECT = `
  a.id, a.workspace_id AS "workspaceId", a.conversation_id AS "conversationId", a.message_id AS "messageId",
  a.uploader_type AS "uploaderType", a.uploader_id AS "uploaderId", a.filename, a.content_type AS "contentType",
  a.size, a.sha256, a.width, a.height, a.storage_key AS "storageKey", a.thumb_key AS "thumbKey", a.thumb_refusal AS "thumbRefusal",
  a.private, a.created_at AS "createdAt", a.attached_at AS "attachedAt"`

export type AttachmentRecord = Pick<
  typeof attachments.$inferSelect,
  | 'id'
  | 'workspaceId'
  | 'conversationId'
  | 'messageId'
  | 'uploaderType'
  | 'uploaderId'
  | 'filename'
  | 'contentType'
  | 'size'
  | 'sha256'
  | 'width'
  | 'height'
  | 'storageKey'
  | 'thumbKey'
  | 'thumbRefusal'
  | 'private'
  | 'createdAt'
  | 'attachedAt'
>

/** The API's attachment; `signed` adds an expiring token to the url (for e-mail). */
export function toAttachmentView(r: AttachmentRecord, signed?: { config: Config; ttlS: number }): AttachmentView {
  const url = signed ? `/media/${r.id}?token=${signMediaToken(signed.config, r.id, signed.ttlS)}` : `/media/${r.id}`
  return {
    id: r.id,
    conversationId: r.conversationId,
    filename: r.filename,
    contentType: r.contentType,
    size: Number(r.size),
    sha256: r.sha256,
    ...(r.width != null ? { width: r.width } : {}),
    ...(r.height != null ? { height: r.height } : {}),
    url,
    createdAt: iso(r.createdAt)!,
  }
}

/**
 * The attachments of a page of messages, by message id, in attaching order, as `audience` may
 * see them: a members-only file (a mail's original.eml on the guest's own message, API.md section
 * 19) is left out for anyone else. One query over attachments_message_idx.
 */
export async function attachmentsOfMessages(sql: Sql, messageIds: string[], audience: Audience): Promise<Map<string, AttachmentRecord[]>> {
  const out = new Map<string, AttachmentRecord[]>()
  if (messageIds.length === 0) return out
  const rows = await sql<AttachmentRecord[]>`
    SELECT ${sql.unsafe(ATTACHMENT_SELECT)} FROM attachments a
    WHERE a.message_id = ANY(${messageIds}::uuid[]) ${audience === 'members' ? sql`` : sql`AND NOT a.private`}
    ORDER BY a.message_id, a.attached_at, a.id`
  for (const r of rows) {
    const list = out.get(r.messageId!) ?? []
    list.push(r)
    out.set(r.messageId!, list)
  }
  return out
}
