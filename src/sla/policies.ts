import { v7 as uuidv7 } from 'uuid'
import type { CreateSlaPolicyInput, SlaPolicyView, UpdateSlaPolicyInput } from '../../schemas/sla.js'
import { memberOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { ConversationPriority } from '../db/schema.js'
import { badRequest, invalidSlaPolicy, slaPolicyNotFound } from '../errors.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { mutateConversation, updateRow } from '../conversations/lifecycle.js'
import { validateBusinessHours, type BusinessHours } from './business-time.js'
import { publishBreaches } from './breaches.js'
import { matchPolicy, syncSla, type SlaBreach, type SlaConversation } from './sync.js'

/**
 * SLA policies (API.md section 18, docs/sla.md "Policies"): CRUD, and PATCH /conversations/:id/sla.
 * A policy's conversations keep their targets in sla_targets; a change of its targets or hours
 * recomputes the open ones from each conversation's history (syncSla), a delete takes it off them.
 */

/** A workspace holds at most this many policies (matching reads them in order on every create). */
export const POLICIES_PER_WORKSPACE = 100
export const POSITION_MAX = 10000

const COLUMNS = `id, name, first_response_minutes AS "firstResponseMinutes", next_response_minutes AS "nextResponseMinutes",
  resolution_minutes AS "resolutionMinutes", business_hours AS "businessHours", channel_ids AS "channelIds", team_ids AS "teamIds",
  priorities, position, created_at AS "createdAt"`

interface PolicyRecord {
  id: string
  name: string
  firstResponseMinutes: number | null
  nextResponseMinutes: number | null
  resolutionMinutes: number | null
  businessHours: BusinessHours | null
  channelIds: string[]
  teamIds: string[]
  priorities: ConversationPriority[]
  position: number
  createdAt: string
}

const toView = (r: PolicyRecord): SlaPolicyView => ({
  id: r.id,
  name: r.name,
  firstResponseMinutes: r.firstResponseMinutes,
  nextResponseMinutes: r.nextResponseMinutes,
  resolutionMinutes: r.resolutionMinutes,
  businessHours: r.businessHours,
  appliesTo: { channelIds: r.channelIds, teamIds: r.teamIds, priorities: r.priorities },
  position: r.position,
  createdAt: iso(r.createdAt),
})

/** GET /sla-policies: by position, then createdAt (the matching order). */
export async function listPolicies(ctx: Ctx): Promise<{ data: SlaPolicyView[] }> {
  const { workspaceId } = memberOf(ctx)
  const rows = await ctx.sql<PolicyRecord[]>`
    SELECT ${ctx.sql.unsafe(COLUMNS)} FROM sla_policies WHERE workspace_id = ${workspaceId} ORDER BY position, created_at, id`
  return { data: rows.map(toView) }
}

/** What the schema cannot check: at least one target, valid hours, the workspace's own ids. */
async function checkPolicy(sql: Sql, workspaceId: string, p: PolicyRecord): Promise<void> {
  if (p.firstResponseMinutes === null && p.nextResponseMinutes === null && p.resolutionMinutes === null) {
    throw badRequest('at least one of firstResponseMinutes, nextResponseMinutes, resolutionMinutes must be set')
  }
  if (p.businessHours !== null) {
    const problem = validateBusinessHours(p.businessHours)
    if (problem) throw badRequest(`field 'businessHours': ${problem}`)
  }
  if (p.channelIds.length > 0) {
    const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM channels WHERE workspace_id = ${workspaceId} AND id = ANY(${p.channelIds}::uuid[])`
    if (n !== p.channelIds.length) throw badRequest("field 'appliesTo.channelIds' must name channels of this workspace")
  }
  if (p.teamIds.length > 0) {
    const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM teams WHERE workspace_id = ${workspaceId} AND id = ANY(${p.teamIds}::uuid[])`
    if (n !== p.teamIds.length) throw badRequest("field 'appliesTo.teamIds' must name teams of this workspace")
  }
}

const lower = (ids: string[] | undefined) => ids?.map((i) => i.toLowerCase())

/** POST /sla-policies; `position` defaults to after the last. */
export async function createPolicy(ctx: Ctx, input: CreateSlaPolicyInput): Promise<SlaPolicyView> {
  const { workspaceId } = memberOf(ctx)
  return ctx.sql.begin(async (sql) => {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`parley:sla-policies:${workspaceId}`}, 0))`
    const [{ n, last }] = await sql<{ n: number; last: number | null }[]>`
      SELECT count(*)::int AS n, max(position) AS last FROM sla_policies WHERE workspace_id = ${workspaceId}`
    if (n >= POLICIES_PER_WORKSPACE) throw badRequest(`a workspace holds at most ${POLICIES_PER_WORKSPACE} SLA policies`)
    const p: PolicyRecord = {
      id: uuidv7(),
      name: input.name,
      firstResponseMinutes: input.firstResponseMinutes ?? null,
      nextResponseMinutes: input.nextResponseMinutes ?? null,
      resolutionMinutes: input.resolutionMinutes ?? null,
      businessHours: input.businessHours ?? null,
      channelIds: lower(input.appliesTo?.channelIds) ?? [],
      teamIds: lower(input.appliesTo?.teamIds) ?? [],
      priorities: input.appliesTo?.priorities ?? [],
      position: input.position ?? (last === null ? 0 : Math.min(last + 1, POSITION_MAX)),
      createdAt: '',
    }
    await checkPolicy(sql, workspaceId, p)
    const [row] = await sql<PolicyRecord[]>`
      INSERT INTO sla_policies (id, workspace_id, name, first_response_minutes, next_response_minutes, resolution_minutes, business_hours,
        channel_ids, team_ids, priorities, position, created_at, updated_at)
      VALUES (${p.id}, ${workspaceId}, ${p.name}, ${p.firstResponseMinutes}, ${p.nextResponseMinutes}, ${p.resolutionMinutes},
        ${p.businessHours === null ? null : JSON.stringify(p.businessHours)}::jsonb, ${p.channelIds}::uuid[], ${p.teamIds}::uuid[], ${p.priorities}::text[],
        ${p.position}, clock_timestamp(), clock_timestamp())
      RETURNING ${sql.unsafe(COLUMNS)}`
    return toView(row)
  })
}

/**
 * PATCH /sla-policies/:id. A change of its targets or hours recomputes the open due dates of its
 * conversations from their history (a breach already recorded stays); a change of appliesTo or
 * position applies to matching from now on (API.md: a conversation is matched when created and
 * when its channel, team or priority changes).
 */
export async function updatePolicy(ctx: Ctx, id: string, patch: UpdateSlaPolicyInput): Promise<SlaPolicyView> {
  const { workspaceId } = memberOf(ctx)
  if (!isUuid(id)) throw slaPolicyNotFound()
  const { view, clockChanged } = await ctx.sql.begin(async (sql) => {
    const [cur] = await sql<PolicyRecord[]>`
      SELECT ${sql.unsafe(COLUMNS)} FROM sla_policies WHERE id = ${id} AND workspace_id = ${workspaceId} FOR NO KEY UPDATE`
    if (!cur) throw slaPolicyNotFound()
    const next: PolicyRecord = {
      ...cur,
      name: patch.name ?? cur.name,
      firstResponseMinutes: patch.firstResponseMinutes !== undefined ? patch.firstResponseMinutes : cur.firstResponseMinutes,
      nextResponseMinutes: patch.nextResponseMinutes !== undefined ? patch.nextResponseMinutes : cur.nextResponseMinutes,
      resolutionMinutes: patch.resolutionMinutes !== undefined ? patch.resolutionMinutes : cur.resolutionMinutes,
      businessHours: patch.businessHours !== undefined ? patch.businessHours : cur.businessHours,
      channelIds: lower(patch.appliesTo?.channelIds) ?? cur.channelIds,
      teamIds: lower(patch.appliesTo?.teamIds) ?? cur.teamIds,
      priorities: patch.appliesTo?.priorities ?? cur.priorities,
      position: patch.position ?? cur.position,
    }
    await checkPolicy(sql, workspaceId, next)
    const [row] = await sql<PolicyRecord[]>`
      UPDATE sla_policies SET name = ${next.name}, first_response_minutes = ${next.firstResponseMinutes},
        next_response_minutes = ${next.nextResponseMinutes}, resolution_minutes = ${next.resolutionMinutes},
        business_hours = ${next.businessHours === null ? null : JSON.stringify(next.businessHours)}::jsonb,
        channel_ids = ${next.channelIds}::uuid[], team_ids = ${next.teamIds}::uuid[], priorities = ${next.priorities}::text[],
        position = ${next.position}, updated_at = clock_timestamp()
      WHERE id = ${id}
      RETURNING ${sql.unsafe(COLUMNS)}`
    const clockChanged =
      next.firstResponseMinutes !== cur.firstResponseMinutes ||
      next.nextResponseMinutes !== cur.nextResponseMinutes ||
      next.resolutionMinutes !== cur.resolutionMinutes ||
      JSON.stringify(next.businessHours) !== JSON.stringify(cur.businessHours)
    return { view: toView(row), clockChanged }
  })
  if (clockChanged) await recomputePolicy(ctx, workspaceId, view.id)
  return view
}

/** Conversations recomputed per batch by recomputePolicy. */
const RECOMPUTE_BATCH = 100

/**
 * Recomputes the targets of the policy's active conversations, each in its own short transaction
 * under its row lock (the lock every change of its targets takes first), in id order.
 */
export async function recomputePolicy(ctx: Pick<Ctx, 'sql' | 'events'>, workspaceId: string, policyId: string): Promise<number> {
  let after = '00000000-0000-0000-0000-000000000000'
  let done = 0
  for (;;) {
    const ids = await ctx.sql<{ id: string }[]>`
      SELECT id FROM conversations
      WHERE sla_policy_id = ${policyId} AND workspace_id = ${workspaceId} AND deleted_at IS NULL
        AND status IN ('OPEN', 'PENDING', 'SNOOZED') AND id > ${after}
      ORDER BY id LIMIT ${RECOMPUTE_BATCH}`
    for (const { id } of ids) {
      const breaches = await ctx.sql.begin(async (sql): Promise<SlaBreach[]> => {
        const [c] = await sql<{ id: string; workspaceId: string; channelId: string; guestId: string; teamId: string | null; assignedAgentId: string | null }[]>`
          SELECT id, workspace_id AS "workspaceId", channel_id AS "channelId", guest_id AS "guestId", team_id AS "teamId",
            assigned_agent_id AS "assignedAgentId"
          FROM conversations WHERE id = ${id} AND deleted_at IS NULL AND sla_policy_id = ${policyId} FOR UPDATE`
        return c ? syncSla(sql, c) : []
      })
      await publishBreaches(ctx, breaches)
      done++
    }
    if (ids.length < RECOMPUTE_BATCH) return done
    after = ids[ids.length - 1].id
  }
}

/**
 * Matches again conversations whose team changed in bulk (a deleted team leaves them with none),
 * each in its own short transaction under its row lock; a policy chosen by hand stays. Runs after
 * the bulk change commits.
 */
export async function rematchConversations(ctx: Pick<Ctx, 'sql' | 'events'>, ids: string[]): Promise<void> {
  for (const id of ids) {
    const breaches = await ctx.sql.begin(async (sql): Promise<SlaBreach[]> => {
      const [c] = await sql<(SlaConversation & { priority: ConversationPriority | null; slaPolicyId: string | null; slaManual: boolean })[]>`
        SELECT id, workspace_id AS "workspaceId", channel_id AS "channelId", guest_id AS "guestId", team_id AS "teamId",
          assigned_agent_id AS "assignedAgentId", priority, sla_policy_id AS "slaPolicyId", sla_manual AS "slaManual"
        FROM conversations WHERE id = ${id} AND deleted_at IS NULL FOR UPDATE`
      if (!c || c.slaManual) return []
      const policy = await matchPolicy(sql, c)
      if (policy === c.slaPolicyId) return []
      await sql`UPDATE conversations SET sla_policy_id = ${policy} WHERE id = ${id}`
      return syncSla(sql, c)
    })
    await publishBreaches(ctx, breaches)
  }
}

/**
 * DELETE /sla-policies/:id: its conversations lose it (no policy, no targets; a policy chosen by
 * hand no longer binds them, so matching applies again at their next change). Their recorded
 * breaches and analytics stay.
 */
export async function deletePolicy(ctx: Ctx, id: string): Promise<void> {
  const { workspaceId } = memberOf(ctx)
  if (!isUuid(id)) throw slaPolicyNotFound()
  await ctx.sql.begin(async (sql) => {
    const [p] = await sql`SELECT 1 FROM sla_policies WHERE id = ${id} AND workspace_id = ${workspaceId} FOR UPDATE`
    if (!p) throw slaPolicyNotFound()
    await sql`DELETE FROM sla_targets WHERE policy_id = ${id} AND workspace_id = ${workspaceId}`
    await sql`UPDATE conversations SET sla_policy_id = NULL, sla_manual = false, sla_due_at = NULL WHERE sla_policy_id = ${id}`
    await sql`DELETE FROM sla_policies WHERE id = ${id}`
  })
}

/**
 * PATCH /conversations/:id/sla { policyId }: a policy of the workspace (else 400
 * INVALID_SLA_POLICY) or null (none), chosen by hand: matching leaves it alone from now on. Its
 * targets are computed from the conversation's history (slaAfterChange, in mutateConversation).
 */
export async function setConversationSla(ctx: Ctx, id: string, policyId: string | null) {
  return mutateConversation(ctx, id, async (sql, row) => {
    let policy: string | null = null
    if (policyId !== null) {
      if (!isUuid(policyId)) throw invalidSlaPolicy()
      const [p] = await sql<{ id: string }[]>`SELECT id FROM sla_policies WHERE id = ${policyId.toLowerCase()} AND workspace_id = ${row.workspaceId}`
      if (!p) throw invalidSlaPolicy()
      policy = p.id
    }
    const [cur] = await sql<{ manual: boolean }[]>`SELECT sla_manual AS manual FROM conversations WHERE id = ${id}`
    if (cur.manual && row.slaPolicyId === policy) return {}
    return { after: await updateRow(sql, id, sql`sla_policy_id = ${policy}, sla_manual = true`) }
  })
}
