import type { Ctx } from '../context.js'
import type { conversations } from '../db/schema.js'
import { conversationNotFound } from '../errors.js'
import { isUuid } from '../uuid.js'
import { hiddenTeams, teamVisible } from './visibility.js'

/** What a visibility check returns: enough to act on the conversation. */
export type VisibleConversation = Pick<typeof conversations.$inferSelect, 'id' | 'workspaceId' | 'guestId'>

/**
 * The conversation `id` as the caller may see it: in the member's workspace, or owned by the
 * visitor's guest; never deleted. Anything else is 404 CONVERSATION_NOT_FOUND, so ids of other
 * workspaces and guests cannot be probed. A malformed id is 404 too. One primary-key lookup.
 */
export async function findConversationForCaller(ctx: Ctx, id: string): Promise<VisibleConversation> {
  if (!isUuid(id)) throw conversationNotFound()
  const c = ctx.caller
  if (c.kind !== 'member' && c.kind !== 'visitor') throw conversationNotFound()
  const guest = c.kind === 'visitor' ? c.guestId : null
  const hidden = await hiddenTeams(ctx)
  const [row] = await ctx.sql<VisibleConversation[]>`
    SELECT id, workspace_id AS "workspaceId", guest_id AS "guestId" FROM conversations c
    WHERE id = ${id} AND workspace_id = ${c.workspaceId} AND deleted_at IS NULL
      AND (${guest}::uuid IS NULL OR guest_id = ${guest}::uuid) ${teamVisible(ctx.sql, hidden)}`
  if (!row) throw conversationNotFound()
  return row
}
