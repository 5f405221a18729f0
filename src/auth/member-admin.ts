import type { MemberView } from '../../schemas/auth.js'
import { memberOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
import type { MemberStatus, members, Role } from '../db/schema.js'
import { lastOwner, memberExists, memberNotFound, missingPermission, ownerOnly } from '../errors.js'
import { iso } from '../time.js'
import type { MemberCaller } from './callers.js'

type MemberRow = Pick<typeof members.$inferSelect, 'userId' | 'name' | 'email' | 'role' | 'status' | 'joinedAt'>

const view = (r: MemberRow): MemberView => ({
  userId: r.userId,
  name: r.name,
  email: r.email,
  role: r.role,
  status: r.status,
  joinedAt: iso(r.joinedAt),
})


/** The columns of MemberRow (a fixed list: the only text this module passes to sql.unsafe). */
const COLUMNS = `user_id AS "userId", name, email, role, status, joined_at AS "joinedAt"`

/** A page of the workspace's members, oldest membership first, ties by userId (the PK index). */
export async function listMembers(ctx: Ctx, { page, pageSize }: { page: number; pageSize: number }) {
  const { sql } = ctx
  const { workspaceId } = memberOf(ctx)
  const [rows, [{ total }]] = await Promise.all([
    sql<MemberRow[]>`
      SELECT ${sql.unsafe(COLUMNS)} FROM members WHERE workspace_id = ${workspaceId}
      ORDER BY joined_at, user_id
      LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`,
    sql<{ total: number }[]>`SELECT count(*)::int AS total FROM members WHERE workspace_id = ${workspaceId}`,
  ])
  return { data: rows.map(view), page, pageSize, total }
}

export async function addMember(ctx: Ctx, input: { userId: string; name: string; email: string; role: Role }): Promise<MemberView> {
  const { sql } = ctx
  const actor = memberOf(ctx)
  if (input.role === 'owner' && actor.role !== 'owner') throw ownerOnly('grant the owner role')
  const [row] = await sql<MemberRow[]>`
    INSERT INTO members (workspace_id, user_id, name, email, role)
    VALUES (${actor.workspaceId}, ${input.userId}, ${input.name}, ${input.email}, ${input.role})
    ON CONFLICT DO NOTHING
    RETURNING ${sql.unsafe(COLUMNS)}`
  if (!row) throw memberExists()
  // This replica may hold a cached "not a member" answer for the user.
  ctx.memberDirectory.invalidate(actor.workspaceId, input.userId)
  return view(row)
}

/**
 * Locks, in one order (user_id), the workspace's active owners and then the target row, and
 * reads the actor's current role. Concurrent demotions/removals of the last two owners queue
 * on these locks; the second one re-reads the owner set after the first commits and gets 409.
 */
async function lockForChange(tx: Sql, actor: MemberCaller, userId: string) {
  const owners = await tx`
    SELECT user_id FROM members
    WHERE workspace_id = ${actor.workspaceId} AND role = 'owner' AND status = 'active'
    ORDER BY user_id
    FOR UPDATE`
  const [target] = await tx<MemberRow[]>`
    SELECT ${tx.unsafe(COLUMNS)} FROM members WHERE workspace_id = ${actor.workspaceId} AND user_id = ${userId}
    FOR UPDATE`
  if (!target) throw memberNotFound()
  // The actor's role as of now, not as of the (short-lived) membership cache.
  const [me] = await tx<Pick<MemberRow, 'role' | 'status'>[]>`
    SELECT role, status FROM members WHERE workspace_id = ${actor.workspaceId} AND user_id = ${actor.userId}`
  if (!me || me.status !== 'active' || me.role === 'agent') throw missingPermission('members:manage')
  return { activeOwners: owners.length, target, actorRole: me.role }
}

const isActiveOwner = (r: { role: Role; status: MemberStatus }) => r.role === 'owner' && r.status === 'active'

export async function updateMember(ctx: Ctx, userId: string, patch: { role?: Role; status?: MemberStatus }): Promise<MemberView> {
  const actor = memberOf(ctx)
  const row = await ctx.sql.begin(async (tx) => {
    const { activeOwners, target, actorRole } = await lockForChange(tx, actor, userId)
    if (target.role === 'owner' && actorRole !== 'owner') throw ownerOnly("change an owner's membership")
    if (patch.role === 'owner' && target.role !== 'owner' && actorRole !== 'owner') throw ownerOnly('grant the owner role')
    const next = { role: patch.role ?? target.role, status: patch.status ?? target.status }
    if (isActiveOwner(target) && !isActiveOwner(next) && activeOwners <= 1) throw lastOwner()
    const [updated] = await tx<MemberRow[]>`
      UPDATE members SET role = ${next.role}, status = ${next.status}
      WHERE workspace_id = ${actor.workspaceId} AND user_id = ${userId}
      RETURNING ${tx.unsafe(COLUMNS)}`
    return updated
  })
  ctx.memberDirectory.invalidate(actor.workspaceId, userId)
  return view(row)
}

export async function removeMember(ctx: Ctx, userId: string): Promise<void> {
  const actor = memberOf(ctx)
  await ctx.sql.begin(async (tx) => {
    const { activeOwners, target, actorRole } = await lockForChange(tx, actor, userId)
    if (target.role === 'owner' && actorRole !== 'owner') throw ownerOnly('remove an owner')
    if (isActiveOwner(target) && activeOwners <= 1) throw lastOwner()
    await tx`DELETE FROM members WHERE workspace_id = ${actor.workspaceId} AND user_id = ${userId}`
  })
  ctx.memberDirectory.invalidate(actor.workspaceId, userId)
}
