import type { Ctx } from '../context.js'
import type { conversations } from '../db/schema.js'
import { conversationNotFound } from '../errors.js'
import { isUuid } from '../uuid.js'
import { conversationVisibleTo } from './visibility.js'

/** What a visibility check returns: enough to act on the conversation. */
export type VisibleConversation = Pick<typeof conversations.$inferSelect, 'id' | 'workspaceId' | 'guestId'>

/**
 * The conversation `id` as the caller may see it (conversationVisibleTo). Anything else is 404 CONVERSATION_NOT_FOUND, so ids of other
 * workspaces and guests cannot be probed. A malformed id is 404 too. One primary-key lookup.
 */
export async function findConversationForCaller(ctx: Ctx, id: string): Promise<VisibleConversation> {
  if (!isUuid(id)) throw conversationNotFound()
  const { sql } = ctx
  const [row] = await sql<VisibleConversation[]>`
    SELECT id, workspace_id AS "workspaceId", guest_id AS "guestId" FROM conversations
    WHERE id = ${id} AND ${conversationVisibleTo(sql, ctx.caller)}`
  if (!row) throw conversationNotFound()
  return row
}
