import type { Deps } from '../context.js'
import type { Sql } from '../db/client.js'
import type { TeamAssignment } from '../db/schema.js'
import { applyCountersDelta, countersDelta, lockCountersShared, type CounterState, type CountersDelta } from '../conversations/counters.js'
import { addHistories } from '../conversations/history.js'
import { conversationRooms } from '../conversations/visibility.js'
import { CONVERSATION_FROM, CONVERSATION_SELECT, toConversationView, type ConversationRecord } from '../conversations/view.js'
import { rooms } from '../events.js'
import { estimatedWait, POSITION_EVENTS_MAX, recordQueueExits } from './queue.js'

/**
 * Routing (API.md section 16, docs/routing.md): hands a team's queued conversations to its
 * eligible members. Everything that decides is in the database, so any replica may route any team
 * and a restart loses nothing:
 *
 * - one transaction per team pass: the workspace's counter lock (shared, as every writer), the
 *   team's advisory lock (transaction-scoped: passes of one team run one after another, on any
 *   replica), then the candidates' member rows FOR NO KEY UPDATE in userId order (a member of
 *   two teams is counted by one pass at a time, so capacity holds across teams), their OPEN
 *   counts, then the queue's head, oldest first, FOR UPDATE;
 * - round_robin's order is team_members.last_assigned_at, written in the same transaction;
 * - presence (who is online) is read before the transaction: it only narrows the candidates,
 *   the invariants (never twice, never over capacity) hold on the locked rows whatever it says.
 */

export type RoutingDeps = Pick<Deps, 'sql' | 'presence' | 'events' | 'log'>

const teamLockKey = (teamId: string) => `parley:routing:${teamId}`

interface Candidate {
  userId: string
  capacity: number | null
  lastAssignedAt: string | null
  open: number
}

interface QueuedRow extends CounterState {
  id: string
  workspaceId: string
  guestId: string
  queuedAt: string
}

/** Who gets the next conversation among `eligible` (non-empty): section 16's two rules, ties by userId. */
export function pick(mode: Exclude<TeamAssignment, 'manual'>, eligible: Candidate[]): Candidate {
  const byOrder = (a: Candidate, b: Candidate) => {
    if (a.lastAssignedAt !== b.lastAssignedAt) {
      if (a.lastAssignedAt === null) return -1
      if (b.lastAssignedAt === null) return 1
      return a.lastAssignedAt < b.lastAssignedAt ? -1 : 1
    }
    return a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0
  }
  const sorted = [...eligible].sort(mode === 'balanced' ? (a, b) => a.open - b.open || byOrder(a, b) : byOrder)
  return sorted[0]
}

const hasRoom = (c: Candidate) => c.capacity === null || c.open < c.capacity

/** Assignments of one pass, for the events after commit. */
interface PassResult {
  workspaceId: string
  assigned: { id: string; guestId: string }[]
}

/**
 * One pass over `teamId`'s queue: assigns as many queued conversations, oldest first, as its
 * online members have room for. Returns how many it assigned.
 */
export async function routeTeam(deps: RoutingDeps, teamId: string): Promise<number> {
  const { sql } = deps
  // One statement: the team, whether anything waits, its active members (each round trip of a
  // pass adds to every queued conversation's wait).
  const [team] = await sql<{ workspaceId: string; assignment: TeamAssignment; queued: boolean; members: string[] }[]>`
    SELECT workspace_id AS "workspaceId", assignment,
           EXISTS (SELECT 1 FROM conversations c WHERE c.team_id = t.id AND c.queued_at IS NOT NULL AND c.deleted_at IS NULL) AS queued,
           ARRAY(SELECT tm.user_id FROM team_members tm
                 JOIN members m ON m.workspace_id = tm.workspace_id AND m.user_id = tm.user_id
                 WHERE tm.team_id = t.id AND m.status = 'active') AS members
    FROM teams t WHERE id = ${teamId}`
  if (!team || team.assignment === 'manual' || !team.queued || team.members.length === 0) return 0
  const presence = await deps.presence.read(team.workspaceId, team.members)
  const online = team.members.filter((u) => presence[u] === 'online')
  if (online.length === 0) return 0

  const result = await sql.begin(async (tx) => passInTransaction(tx, teamId, team.workspaceId, online))
  // Events after commit, without holding up the next pass of this team.
  if (result.assigned.length > 0) {
    announce(deps, teamId, result).catch((err: Error) => deps.log.warn({ err: { message: err.message }, teamId }, 'routing events not sent'))
  }
  return result.assigned.length
}

async function passInTransaction(tx: Sql, teamId: string, workspaceId: string, online: string[]): Promise<PassResult> {
  const out: PassResult = { workspaceId, assigned: [] }
  // Four statements sent at once (postgres.js pipelines a transaction's queries; PostgreSQL runs
  // them one after another, in this order), one round trip: the counters' lock (shared), the
  // team's lock, then, under it, the team (its mode may have changed) and the candidates' member
  // rows FOR NO KEY UPDATE in userId order, and last each online member's OPEN count in the
  // workspace (conv_open_unread_idx), every team's. The count is its own statement, so its
  // snapshot is taken once the member rows are locked: it sees what a pass of another team that
  // held them committed (a member of two teams never goes over capacity).
  const [, , candidates, counts] = await Promise.all([
    lockCountersShared(tx, workspaceId),
    tx`SELECT pg_advisory_xact_lock(hashtextextended(${teamLockKey(teamId)}, 0))`,
    tx<(Candidate & { mode: TeamAssignment })[]>`
      SELECT m.user_id AS "userId", COALESCE(tm.capacity, t.capacity) AS capacity,
             tm.last_assigned_at AS "lastAssignedAt", 0 AS open, t.assignment AS mode
      FROM teams t
      JOIN team_members tm ON tm.team_id = t.id
      JOIN members m ON m.workspace_id = tm.workspace_id AND m.user_id = tm.user_id
      WHERE t.id = ${teamId} AND t.assignment <> 'manual' AND m.status = 'active' AND m.user_id = ANY(${online}::text[])
      ORDER BY m.user_id
      FOR NO KEY UPDATE OF m`,
    tx<{ userId: string; n: number }[]>`
      SELECT assigned_agent_id AS "userId", count(*)::int AS n FROM conversations
      WHERE workspace_id = ${workspaceId} AND status = 'OPEN' AND deleted_at IS NULL
        AND assigned_agent_id = ANY(${online}::text[])
      GROUP BY assigned_agent_id`,
  ])
  if (candidates.length === 0) return out
  const mode = candidates[0].mode as Exclude<TeamAssignment, 'manual'>
  const byUser = new Map(candidates.map((c) => [c.userId, c]))
  for (const r of counts) {
    const c = byUser.get(r.userId)
    if (c) c.open = r.n
  }
  const room = candidates.reduce((n, c) => n + (c.capacity === null ? 1000 : Math.max(0, c.capacity - c.open)), 0)
  if (room === 0) return out
  const queue = await tx<QueuedRow[]>`
    SELECT id, workspace_id AS "workspaceId", guest_id AS "guestId", queued_at AS "queuedAt",
           status, deleted_at IS NOT NULL AS deleted, assigned_agent_id AS "assignedAgentId",
           channel_id AS "channelId", unread_count AS "unreadCount", team_id AS "teamId"
    FROM conversations
    WHERE team_id = ${teamId} AND queued_at IS NOT NULL AND deleted_at IS NULL
    ORDER BY queued_at, id
    LIMIT ${Math.min(room, 500)}
    FOR UPDATE`
  // Who gets what, decided here from the locked rows (the rules are pure), then written in a
  // handful of set-based statements whatever the batch: each round trip of a pass delays every
  // conversation still waiting (docs/routing.md, "Latency").
  const picks: { row: QueuedRow; agentId: string }[] = []
  const lastPick = new Map<string, number>()
  for (const row of queue) {
    const eligible = candidates.filter(hasRoom)
    if (eligible.length === 0) break
    const chosen = pick(mode, eligible)
    // After every stored time, in the pass's order ('~' sorts after any timestamp text).
    chosen.lastAssignedAt = `~${String(picks.length).padStart(6, '0')}`
    chosen.open++
    lastPick.set(chosen.userId, picks.length)
    picks.push({ row, agentId: chosen.userId })
  }
  if (picks.length === 0) return out
  // The rows are locked: after the update each is as read, with its assignee.
  const delta: CountersDelta = new Map()
  for (const p of picks) {
    const after: CounterState = { ...p.row, assignedAgentId: p.agentId }
    for (const [scope, d] of countersDelta(p.row, after)) {
      const sum = delta.get(scope) ?? { conversations: 0, messages: 0 }
      delta.set(scope, { conversations: sum.conversations + d.conversations, messages: sum.messages + d.messages })
    }
  }
  for (const [scope, d] of delta) if (d.conversations === 0 && d.messages === 0) delta.delete(scope)
  const stamped = [...lastPick.entries()]
  // Independent writes, pipelined (one round trip): the assignments, the counters, the history
  // entries (AUTO), the queue exits (the estimate), and the stored round-robin order (strictly
  // after every time stored in the team, in pick order).
  await Promise.all([
    tx`
      UPDATE conversations c SET assigned_agent_id = x.agent_id, queued_at = NULL, updated_at = clock_timestamp()
      FROM unnest(${picks.map((p) => p.row.id)}::uuid[], ${picks.map((p) => p.agentId)}::text[]) AS x(id, agent_id)
      WHERE c.id = x.id`,
    applyCountersDelta(tx, workspaceId, delta),
    addHistories(tx, workspaceId, 'ASSIGNED', null, 'AUTO', picks.map((p) => ({ row: p.row, agentId: p.agentId }))),
    recordQueueExits(tx, teamId, picks.map((p) => ({ id: p.row.id, queuedAt: p.row.queuedAt }))),
    // The base once (MATERIALIZED: clock_timestamp() is volatile, a rescan per row would move it).
    tx`
      WITH b AS MATERIALIZED (
        SELECT GREATEST(clock_timestamp(), COALESCE(max(last_assigned_at) + interval '1 microsecond', '-infinity')) AS base
        FROM team_members WHERE team_id = ${teamId})
      UPDATE team_members tm SET last_assigned_at = b.base + x.n * interval '1 microsecond'
      FROM unnest(${stamped.map(([u]) => u)}::text[], ${stamped.map(([, n]) => n)}::int[]) AS x(user_id, n), b
      WHERE tm.team_id = ${teamId} AND tm.user_id = x.user_id`,
  ])
  out.assigned = picks.map((p) => ({ id: p.row.id, guestId: p.row.guestId }))
  return out
}

/**
 * After commit: conversation:updated for each assigned conversation, and for the conversations
 * still queued within the first POSITION_EVENTS_MAX places, whose position moved, to their
 * visitor with `queue`. Two reads whatever the numbers (the views by id, the queue's head).
 */
async function announce(deps: RoutingDeps, teamId: string, pass: PassResult) {
  const { sql, events } = deps
  const rows = await sql<ConversationRecord[]>`
    SELECT ${sql.unsafe(CONVERSATION_SELECT)} FROM ${sql.unsafe(CONVERSATION_FROM)}
    WHERE c.id = ANY(${pass.assigned.map((a) => a.id)}::uuid[]) AND c.deleted_at IS NULL`
  const to = await conversationRooms(sql, { workspaceId: pass.workspaceId, guestId: '', teamId }, true)
  for (const r of rows) {
    const conversation = { ...toConversationView(r), queue: null }
    events.publish([...to, rooms.guest(r.guestId)], 'conversation:updated', { conversation })
  }
  await announcePositions(deps, teamId)
}

/** Tells the first POSITION_EVENTS_MAX queued visitors of `teamId` their place. */
export async function announcePositions(deps: RoutingDeps, teamId: string) {
  const { sql, events } = deps
  const head = await sql<ConversationRecord[]>`
    SELECT ${sql.unsafe(CONVERSATION_SELECT)} FROM ${sql.unsafe(CONVERSATION_FROM)}
    WHERE c.team_id = ${teamId} AND c.queued_at IS NOT NULL AND c.deleted_at IS NULL
    ORDER BY c.queued_at, c.id LIMIT ${POSITION_EVENTS_MAX}`
  if (head.length === 0) return
  const estimatedWaitSeconds = await estimatedWait(sql, teamId)
  for (const [i, r] of head.entries()) {
    const conversation = { ...toConversationView(r), queue: { position: i + 1, estimatedWaitSeconds } }
    events.publish([rooms.guest(r.guestId)], 'conversation:updated', { conversation })
  }
}

/** Every team with a non-empty queue (conv_team_queue_idx). */
export async function queuedTeams(sql: Sql): Promise<string[]> {
  const rows = await sql<{ teamId: string }[]>`
    SELECT DISTINCT team_id AS "teamId" FROM conversations WHERE queued_at IS NOT NULL AND deleted_at IS NULL AND team_id IS NOT NULL`
  return rows.map((r) => r.teamId)
}

/** The teams of a member (team_members_user_idx). */
export async function teamsOf(sql: Sql, workspaceId: string, userId: string): Promise<string[]> {
  const rows = await sql<{ teamId: string }[]>`
    SELECT team_id AS "teamId" FROM team_members WHERE workspace_id = ${workspaceId} AND user_id = ${userId}`
  return rows.map((r) => r.teamId)
}
