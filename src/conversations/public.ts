import type { Ctx } from '../context.js'
import type { conversations, members } from '../db/schema.js'
import { conversationNotFound } from '../errors.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'

/**
 * The anonymous status endpoints (/api/public/conversations/:id/...). They answer by id alone, so
 * they expose only what a holder of the id may know: no e-mail, no guest or member ids. A deleted
 * conversation still answers (deleted: true) so a widget can tell "gone" from "never existed";
 * an id that never existed, or is not a UUID, is 404.
 */
type PublicRow = Pick<typeof conversations.$inferSelect, 'id' | 'status' | 'assignedAgentId' | 'createdAt' | 'lastMessageAt' | 'deletedAt'> & {
  /** The assigned agent's member row, null when none is assigned (LEFT JOIN). */
  agentName: (typeof members.$inferSelect)['name'] | null
  agentAvatarUrl: (typeof members.$inferSelect)['avatarUrl']
}

async function publicConversation(ctx: Ctx, id: string): Promise<PublicRow> {
  if (!isUuid(id)) throw conversationNotFound()
  const [row] = await ctx.sql<PublicRow[]>`
    SELECT c.id, c.status, c.assigned_agent_id AS "assignedAgentId", c.created_at AS "createdAt",
      c.last_message_at AS "lastMessageAt", c.deleted_at AS "deletedAt",
      m.name AS "agentName", m.avatar_url AS "agentAvatarUrl"
    FROM conversations c
    LEFT JOIN members m ON m.workspace_id = c.workspace_id AND m.user_id = c.assigned_agent_id
    WHERE c.id = ${id}`
  if (!row) throw conversationNotFound()
  return row
}

/** GET /api/public/conversations/:id/status */
export async function publicStatus(ctx: Ctx, id: string) {
  const r = await publicConversation(ctx, id)
  return { id: r.id, deleted: r.deletedAt !== null, status: r.status }
}

/** GET .../:id/agent: the assigned agent's display name and avatar; null when unassigned, deleted or the member is gone. */
export async function publicAgent(ctx: Ctx, id: string) {
  const r = await publicConversation(ctx, id)
  return {
    agent: r.deletedAt === null && r.assignedAgentId && r.agentName !== null ? { name: r.agentName, avatarUrl: r.agentAvatarUrl } : null,
  }
}

/** GET .../:id/meta */
export async function publicMeta(ctx: Ctx, id: string) {
  const r = await publicConversation(ctx, id)
  return {
    id: r.id,
    status: r.status,
    assigned: r.assignedAgentId !== null,
    createdAt: iso(r.createdAt),
    lastMessageAt: iso(r.lastMessageAt),
    deleted: r.deletedAt !== null,
  }
}
