import type { Sql } from '../plugins/db.js'
import { CONVERSATION_FROM, CONVERSATION_SELECT } from '../src/conversations/view.js'

/**
 * Page 1 of GET /conversations (OPEN, pinned first, newest lastMessageAt first, default limit),
 * as SQL the raw-SQL ceiling server runs with no auth, validation or mapping: the database's
 * limit for that endpoint. Until src/conversations/lists.ts lands this is the keyset query the
 * conv_open_last_msg_idx index serves, with the shared conversation projection.
 */
export function listPageOne(sql: Sql, workspaceId: string, limit = 20) {
  return sql`
    SELECT ${sql.unsafe(CONVERSATION_SELECT)}
    FROM ${sql.unsafe(CONVERSATION_FROM)}
    WHERE c.workspace_id = ${workspaceId} AND c.deleted_at IS NULL AND c.status = 'OPEN'
    ORDER BY c.pinned DESC, c.last_message_at DESC, c.id DESC
    LIMIT ${limit + 1}`
}
