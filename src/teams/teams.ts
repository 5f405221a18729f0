import { v7 as uuidv7 } from 'uuid'
import type { CreateTeamInput, TeamQueueView, TeamView, UpdateTeamInput } from '../../schemas/teams.js'
import { memberOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { TeamAssignment } from '../db/schema.js'
import { lockCountersShared } from '../conversations/counters.js'
import { conversationRooms } from '../conversations/visibility.js'
import { findConversationView } from '../conversations/view.js'
import { invalidAgent, teamNameTaken, teamNotFound, tooManyTeams } from '../errors.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { teamQueue } from './queue.js'
import { releaseMember } from './rules.js'
import { rematchConversations } from '../sla/policies.js'

/** Teams (API.md section 16). Every member reads them; `teams:manage` changes them (the route declares it). */

/** A workspace holds at most this many teams. */
export const TEAMS_MAX = 200

interface TeamRow {
  id: string
  workspaceId: string
  name: string
  description: string | null
  assignment: TeamAssignment
  capacity: number | null
  private: boolean
  createdAt: string
  updatedAt: string
}

const COLUMNS = `id, workspace_id AS "workspaceId", name, description, assignment, capacity, private,
  created_at AS "createdAt", updated_at AS "updatedAt"`

/** The views of `rows`, members by name (members still in the workspace). */
async function views(sql: Sql, rows: TeamRow[]): Promise<TeamView[]> {
  if (rows.length === 0) return []
  const members = await sql<{ teamId: string; userId: string; name: string; capacity: number | null }[]>`
    SELECT tm.team_id AS "teamId", tm.user_id AS "userId", m.name, tm.capacity
    FROM team_members tm JOIN members m ON m.workspace_id = tm.workspace_id AND m.user_id = tm.user_id
    WHERE tm.team_id = ANY(${rows.map((r) => r.id)}::uuid[])
    ORDER BY m.name, tm.user_id`
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    description: r.description,
    assignment: r.assignment,
    capacity: r.capacity,
    private: r.private,
    members: members.filter((m) => m.teamId === r.id).map(({ userId, name, capacity }) => ({ userId, name, capacity })),
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
  }))
}

async function findTeam(sql: Sql, workspaceId: string, id: string, lock = false): Promise<TeamRow> {
  if (!isUuid(id)) throw teamNotFound()
  const [row] = await sql<TeamRow[]>`
    SELECT ${sql.unsafe(COLUMNS)} FROM teams WHERE id = ${id} AND workspace_id = ${workspaceId} ${lock ? sql`FOR UPDATE` : sql``}`
  if (!row) throw teamNotFound()
  return row
}

async function viewOf(sql: Sql, workspaceId: string, id: string): Promise<TeamView> {
  const [v] = await views(sql, [await findTeam(sql, workspaceId, id)])
  return v
}

/** GET /teams: every team by name, private ones included (a private team hides its conversations, not its name). */
export async function listTeams(ctx: Ctx): Promise<{ data: TeamView[] }> {
  const { workspaceId } = memberOf(ctx)
  const rows = await ctx.sql<TeamRow[]>`
    SELECT ${ctx.sql.unsafe(COLUMNS)} FROM teams WHERE workspace_id = ${workspaceId} ORDER BY lower(name), id`
  return { data: await views(ctx.sql, rows) }
}

export async function getTeam(ctx: Ctx, id: string): Promise<TeamView> {
  return viewOf(ctx.sql, memberOf(ctx).workspaceId, id)
}

/** POST /teams: 409 TEAM_NAME_TAKEN (case-insensitive), 409 TOO_MANY_TEAMS at TEAMS_MAX (counted under a workspace lock). */
export async function createTeam(ctx: Ctx, input: CreateTeamInput): Promise<TeamView> {
  const { workspaceId } = memberOf(ctx)
  return ctx.sql.begin(async (sql) => {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`parley:teams:${workspaceId}`}, 0))`
    const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM teams WHERE workspace_id = ${workspaceId}`
    if (n >= TEAMS_MAX) throw tooManyTeams(TEAMS_MAX)
    const [row] = await sql<TeamRow[]>`
      INSERT INTO teams (id, workspace_id, name, description, assignment, capacity, private)
      VALUES (${uuidv7()}, ${workspaceId}, ${input.name}, ${input.description ?? null}, ${input.assignment ?? 'manual'},
              ${input.capacity ?? null}, ${input.private ?? false})
      ON CONFLICT DO NOTHING
      RETURNING ${sql.unsafe(COLUMNS)}`
    if (!row) throw teamNameTaken()
    const [v] = await views(sql, [row])
    return v
  })
}

/**
 * PATCH /teams/:id. Turning on auto-assignment queues the team's unassigned OPEN conversations
 * (oldest first by creation); turning it off empties the queue. A capacity change is offered to
 * routing after commit (it may have risen).
 */
export async function updateTeam(ctx: Ctx, id: string, patch: UpdateTeamInput): Promise<TeamView> {
  const { workspaceId } = memberOf(ctx)
  const view = await ctx.sql.begin(async (sql) => {
    const before = await findTeam(sql, workspaceId, id, true)
    const [row] = await sql<TeamRow[]>`
      UPDATE teams SET
        name = ${patch.name ?? before.name},
        description = ${patch.description === undefined ? before.description : patch.description},
        assignment = ${patch.assignment ?? before.assignment},
        capacity = ${patch.capacity === undefined ? before.capacity : patch.capacity},
        private = ${patch.private ?? before.private},
        updated_at = clock_timestamp()
      WHERE id = ${before.id}
      RETURNING ${sql.unsafe(COLUMNS)}`.catch((err: { code?: string }) => {
      if (err.code === '23505') throw teamNameTaken()
      throw err
    })
    const wasAuto = before.assignment !== 'manual'
    const isAuto = row.assignment !== 'manual'
    if (!wasAuto && isAuto) {
      await sql`
        UPDATE conversations SET queued_at = clock_timestamp()
        WHERE team_id = ${row.id} AND status = 'OPEN' AND deleted_at IS NULL AND assigned_agent_id IS NULL AND queued_at IS NULL`
    } else if (wasAuto && !isAuto) {
      await sql`UPDATE conversations SET queued_at = NULL WHERE team_id = ${row.id} AND queued_at IS NOT NULL AND deleted_at IS NULL`
    }
    const [v] = await views(sql, [row])
    return v
  })
  ctx.routing.teams([view.id])
  return view
}

/**
 * DELETE /teams/:id: its conversations keep their assignee and get teamId null; queued ones leave
 * the queue; its counters go (the conversations no longer count in a team).
 */
export async function deleteTeam(ctx: Ctx, id: string): Promise<void> {
  const { workspaceId } = memberOf(ctx)
  const moved = await ctx.sql.begin(async (sql) => {
    await lockCountersShared(sql, workspaceId)
    const team = await findTeam(sql, workspaceId, id, true)
    const rows = await sql<{ id: string; manual: boolean }[]>`
      UPDATE conversations SET team_id = NULL, queued_at = NULL WHERE team_id = ${team.id}
      RETURNING id, sla_manual AS manual`
    await sql`UPDATE channels SET default_team_id = NULL WHERE default_team_id = ${team.id}`
    await sql`
      DELETE FROM unread_counters WHERE workspace_id = ${workspaceId}
        AND scope IN (${`team:${team.id}`}, ${`team-unassigned:${team.id}`})`
    await sql`DELETE FROM teams WHERE id = ${team.id}`
    return rows.filter((r) => !r.manual).map((r) => r.id)
  })
  // Their team changed: their SLA policy is matched again (API.md section 18).
  await rematchConversations(ctx, moved)
}

/** PUT /teams/:id/members/:userId: an active member of the workspace (else 400 INVALID_AGENT); twice updates the capacity. */
export async function putTeamMember(ctx: Ctx, id: string, userId: string, input: { capacity?: number | null }): Promise<TeamView> {
  const { workspaceId } = memberOf(ctx)
  const view = await ctx.sql.begin(async (sql) => {
    const team = await findTeam(sql, workspaceId, id, true)
    const [m] = await sql`SELECT 1 FROM members WHERE workspace_id = ${workspaceId} AND user_id = ${userId} AND status = 'active'`
    if (!m) throw invalidAgent()
    await sql`
      INSERT INTO team_members (team_id, workspace_id, user_id, capacity)
      VALUES (${team.id}, ${workspaceId}, ${userId}, ${input.capacity ?? null})
      ON CONFLICT (team_id, user_id) DO UPDATE SET capacity = excluded.capacity`
    await sql`UPDATE teams SET updated_at = clock_timestamp() WHERE id = ${team.id}`
    return viewOf(sql, workspaceId, team.id)
  })
  // A member joining, or a capacity that may have risen: the queue may move.
  ctx.routing.teams([view.id])
  return view
}

/** DELETE /teams/:id/members/:userId: their OPEN conversations of this team go back to its queue (MEMBER_REMOVED). */
export async function removeTeamMember(ctx: Ctx, id: string, userId: string): Promise<TeamView> {
  const { workspaceId } = memberOf(ctx)
  const out = await ctx.sql.begin(async (sql) => {
    await lockCountersShared(sql, workspaceId)
    const team = await findTeam(sql, workspaceId, id, true)
    const [gone] = await sql`DELETE FROM team_members WHERE team_id = ${team.id} AND user_id = ${userId} RETURNING 1`
    const released = gone ? await releaseMember(sql, workspaceId, userId, [team.id]) : []
    if (gone) await sql`UPDATE teams SET updated_at = clock_timestamp() WHERE id = ${team.id}`
    return { view: await viewOf(sql, workspaceId, team.id), released }
  })
  await announceReleased(ctx, workspaceId, out.released)
  return out.view
}

/**
 * After a member left a team or the workspace (or was disabled): conversation:updated for each
 * conversation released, and routing of their teams.
 */
export async function announceReleased(ctx: Ctx, workspaceId: string, released: { id: string; guestId: string; teamId: string }[]) {
  for (const r of released) {
    const conversation = await findConversationView(ctx.sql, r.id)
    if (conversation) ctx.events.publish(await conversationRooms(ctx.sql, { workspaceId, guestId: r.guestId, teamId: r.teamId }), 'conversation:updated', { conversation })
  }
  ctx.routing.teams(released.map((r) => r.teamId))
}

/** GET /teams/:id/queue: oldest first, at most 500. */
export async function getTeamQueue(ctx: Ctx, id: string): Promise<TeamQueueView> {
  const team = await findTeam(ctx.sql, memberOf(ctx).workspaceId, id)
  return teamQueue(ctx.sql, team.id)
}
