import type { Sql } from '../db/client.js'
import { applyCountersDelta, countersDelta, type CounterState } from '../conversations/counters.js'
import { addHistory } from '../conversations/history.js'
import { invalidTeam } from '../errors.js'
import { isUuid } from '../uuid.js'
import { recordQueueExit } from './queue.js'

/**
 * When a conversation enters or leaves its team's queue outside routing (API.md section 16,
 * docs/routing.md): each helper runs in the transaction that holds the conversation's row lock
 * (src/conversations/lifecycle.ts), and the caller offers the team to routing after commit.
 */

/** What these rules read of the locked row. */
export interface QueueRow {
  id: string
  workspaceId: string
  status: string
  assignedAgentId: string | null
  teamId: string | null
  queuedAt: string | null
}

const COUNTERS = `status, deleted_at IS NOT NULL AS deleted, assigned_agent_id AS "assignedAgentId",
  channel_id AS "channelId", unread_count AS "unreadCount", team_id AS "teamId"`

/**
 * `teamId` as a team of the workspace (its stored, lower-case id), else 400 INVALID_TEAM naming
 * `field`: the one check behind PATCH /conversations/:id/team, the bulk `team` action, a
 * channel's `defaultTeamId` and a saved view's `teamId` filter (API.md sections 16, 17).
 */
export async function teamOfWorkspace(sql: Sql, workspaceId: string, teamId: string, field = 'teamId'): Promise<string> {
  const [t] = isUuid(teamId) ? await sql<{ id: string }[]>`SELECT id FROM teams WHERE id = ${teamId.toLowerCase()} AND workspace_id = ${workspaceId}` : []
  if (!t) throw invalidTeam(field)
  return t.id
}

/** True when `teamId` hands its conversations out automatically. */
export async function autoAssigning(sql: Sql, teamId: string | null): Promise<boolean> {
  if (!teamId) return false
  const [t] = await sql<{ auto: boolean }[]>`SELECT assignment <> 'manual' AS auto FROM teams WHERE id = ${teamId}`
  return t?.auto ?? false
}

/** Is `userId` an active member of the workspace and of `teamId`? */
async function inTeam(sql: Sql, teamId: string, workspaceId: string, userId: string): Promise<boolean> {
  const [r] = await sql`
    SELECT 1 FROM team_members tm JOIN members m ON m.workspace_id = tm.workspace_id AND m.user_id = tm.user_id
    WHERE tm.team_id = ${teamId} AND m.workspace_id = ${workspaceId} AND m.user_id = ${userId} AND m.status = 'active'`
  return r !== undefined
}

/** A queued conversation got an assignee by hand: the wait counts for the estimate. */
export async function recordAssignedFromQueue(sql: Sql, row: QueueRow) {
  if (row.teamId && row.queuedAt) await recordQueueExit(sql, row.teamId, row.id, row.queuedAt)
}

/** An unassigned OPEN conversation of an auto-assigning team waits in its queue. */
export async function afterUnassign(sql: Sql, row: QueueRow): Promise<boolean> {
  return row.status === 'OPEN' && (await autoAssigning(sql, row.teamId))
}

/**
 * A conversation was just reopened (already OPEN in this transaction): it keeps its assignee if
 * they are still an active member of its team (or it has no team); otherwise, on an
 * auto-assigning team, it is unassigned (reason REOPENED) and queued. Null: nothing changed.
 */
export async function queueOnReopen(sql: Sql, row: QueueRow): Promise<CounterState | null> {
  if (!row.teamId || !(await autoAssigning(sql, row.teamId))) return null
  if (row.assignedAgentId && (await inTeam(sql, row.teamId, row.workspaceId, row.assignedAgentId))) return null
  const [after] = await sql<CounterState[]>`
    UPDATE conversations SET assigned_agent_id = NULL, queued_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE id = ${row.id} RETURNING ${sql.unsafe(COUNTERS)}`
  if (row.assignedAgentId) await addHistory(sql, row, 'UNASSIGNED', null, null, 'REOPENED')
  return after
}

/**
 * Moves the conversation to `teamId` (null: none). The assignee stays if they belong to the new
 * team (or there is none); otherwise it is unassigned (reason TEAM_CHANGED, `by` the member) and,
 * OPEN on an auto-assigning team, queued.
 */
export async function queueOnTeamChange(sql: Sql, row: QueueRow, teamId: string | null, by: string): Promise<CounterState> {
  const keep = row.assignedAgentId !== null && (teamId === null || (await inTeam(sql, teamId, row.workspaceId, row.assignedAgentId)))
  const assignee = keep ? row.assignedAgentId : null
  const queue = assignee === null && row.status === 'OPEN' && (await autoAssigning(sql, teamId))
  const [after] = await sql<CounterState[]>`
    UPDATE conversations SET team_id = ${teamId}, assigned_agent_id = ${assignee},
      queued_at = CASE WHEN ${queue} THEN COALESCE(${row.teamId === teamId ? row.queuedAt : null}::timestamptz, clock_timestamp()) END,
      updated_at = clock_timestamp()
    WHERE id = ${row.id} RETURNING ${sql.unsafe(COUNTERS)}`
  if (row.assignedAgentId && !keep) await addHistory(sql, row, 'UNASSIGNED', null, by, 'TEAM_CHANGED')
  return after
}

/**
 * `userId` left `teamIds` (null: every team, the member left the workspace or was disabled):
 * their OPEN conversations of those teams go back to the queue (reason MEMBER_REMOVED), in the
 * caller's transaction; returns them (for the events) and their teams (for routing).
 */
export async function releaseMember(
  sql: Sql,
  workspaceId: string,
  userId: string,
  teamIds: string[] | null,
): Promise<{ id: string; guestId: string; teamId: string }[]> {
  const rows = await sql<(QueueRow & CounterState & { guestId: string })[]>`
    SELECT c.id, c.workspace_id AS "workspaceId", c.guest_id AS "guestId", c.status, c.assigned_agent_id AS "assignedAgentId",
           c.team_id AS "teamId", c.queued_at AS "queuedAt", c.deleted_at IS NOT NULL AS deleted,
           c.channel_id AS "channelId", c.unread_count AS "unreadCount"
    FROM conversations c
    WHERE c.workspace_id = ${workspaceId} AND c.assigned_agent_id = ${userId} AND c.status = 'OPEN' AND c.deleted_at IS NULL
      AND c.team_id IS NOT NULL AND (${teamIds}::uuid[] IS NULL OR c.team_id = ANY(${teamIds}::uuid[]))
    ORDER BY c.id
    FOR UPDATE OF c`
  const out: { id: string; guestId: string; teamId: string }[] = []
  for (const row of rows) {
    const queue = await autoAssigning(sql, row.teamId)
    const [after] = await sql<CounterState[]>`
      UPDATE conversations SET assigned_agent_id = NULL, queued_at = CASE WHEN ${queue} THEN clock_timestamp() END, updated_at = clock_timestamp()
      WHERE id = ${row.id} RETURNING ${sql.unsafe(COUNTERS)}`
    await applyCountersDelta(sql, workspaceId, countersDelta(row, after))
    await addHistory(sql, row, 'UNASSIGNED', null, null, 'MEMBER_REMOVED')
    out.push({ id: row.id, guestId: row.guestId, teamId: row.teamId! })
  }
  return out
}
