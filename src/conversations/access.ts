import { and, eq, isNull } from 'drizzle-orm'
import type { Ctx } from '../context.js'
import { conversations } from '../db/schema.js'
import { conversationNotFound } from '../errors.js'

export type ConversationRow = typeof conversations.$inferSelect

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isUuid(value: string): boolean {
  return UUID.test(value)
}

/**
 * The conversation `id` as the caller may see it: in the member's workspace, or owned by the
 * visitor's guest; never deleted. Anything else is 404 CONVERSATION_NOT_FOUND, so ids of other
 * workspaces and guests cannot be probed. A malformed id is 404 too.
 */
export async function findConversationForCaller(ctx: Ctx, id: string): Promise<ConversationRow> {
  if (!isUuid(id)) throw conversationNotFound()
  const c = ctx.caller
  const scope =
    c.kind === 'member'
      ? eq(conversations.workspaceId, c.workspaceId)
      : c.kind === 'visitor'
        ? and(eq(conversations.workspaceId, c.workspaceId), eq(conversations.guestId, c.guestId))
        : undefined
  if (!scope) throw conversationNotFound()
  const [row] = await ctx.db
    .select()
    .from(conversations)
    .where(and(eq(conversations.id, id), scope, isNull(conversations.deletedAt)))
    .limit(1)
  if (!row) throw conversationNotFound()
  return row
}
