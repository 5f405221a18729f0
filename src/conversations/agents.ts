import type { AvailableAgentView } from '../../schemas/conversations.js'
import { memberOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { PresenceStatus } from '../db/schema.js'


const RANK: Record<PresenceStatus, number> = { online: 0, away: 1, offline: 2 }

/** Active members with their OPEN assigned conversations, counted by one grouped query. */
export function agentsQuery(sql: Sql, workspaceId: string) {
  return sql<{ userId: string; name: string; openAssigned: number }[]>`
    SELECT m.user_id AS "userId", m.name, COALESCE(a.n, 0)::int AS "openAssigned"
    FROM members m
    LEFT JOIN (
      SELECT assigned_agent_id, count(*) AS n
      FROM conversations
      WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL AND status = 'OPEN'
        AND assigned_agent_id IS NOT NULL
      GROUP BY assigned_agent_id
    ) a ON a.assigned_agent_id = m.user_id
    WHERE m.workspace_id = ${workspaceId} AND m.status = 'active'`
}

/**
 * The workspace's active members with their presence and the number of OPEN conversations
 * assigned to each (one grouped query over conv_open_unread_idx). Online first, then away, then
 * offline; within each, fewest open assigned first, then by name. Redis down: everyone offline
 * (the list still helps to pick an agent), logged.
 */
export async function availableAgents(ctx: Ctx): Promise<AvailableAgentView[]> {
  const { workspaceId } = memberOf(ctx)
  const rows = await agentsQuery(ctx.sql, workspaceId)
  let presence: Record<string, PresenceStatus> = {}
  try {
    presence = await ctx.presence.read(workspaceId, rows.map((r) => r.userId))
  } catch (err) {
    ctx.log.warn({ err: { message: (err as Error).message } }, 'presence unavailable; reporting everyone offline')
  }
  return rows
    .map((r) => ({ userId: r.userId, name: r.name, presence: presence[r.userId] ?? 'offline', openAssigned: r.openAssigned }))
    .sort(
      (a, b) =>
        RANK[a.presence] - RANK[b.presence] ||
        a.openAssigned - b.openAssigned ||
        a.name.localeCompare(b.name) ||
        (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0),
    )
}
