import { and, asc, count, eq } from 'drizzle-orm'
import { memberOf, type Ctx } from '../context.js'
import type { Db } from '../db/client.js'
import { members } from '../db/schema.js'
import { conflict, forbidden, notFound } from '../errors.js'
import { iso } from '../time.js'
import type { MemberCaller } from './callers.js'
import type { Role } from './permissions.js'

type MemberRow = typeof members.$inferSelect
type Status = 'active' | 'disabled'

export interface MemberView {
  userId: string
  name: string
  email: string
  role: Role
  status: Status
  joinedAt: string
}

const view = (r: MemberRow): MemberView => ({
  userId: r.userId,
  name: r.name,
  email: r.email,
  role: r.role,
  status: r.status,
  joinedAt: iso(r.joinedAt),
})

const memberNotFound = () => notFound('MEMBER_NOT_FOUND', 'Member not found')
const lastOwner = () => conflict('LAST_OWNER', 'The workspace must keep at least one active owner')
const ownerOnly = (what: string) => forbidden(`Only an owner may ${what}`, 'FORBIDDEN')

/** A page of the workspace's members, oldest membership first, ties by userId (the PK index). */
export async function listMembers(ctx: Ctx, { page, pageSize }: { page: number; pageSize: number }) {
  const { db } = ctx
  const { workspaceId } = memberOf(ctx)
  const [rows, [{ total }]] = await Promise.all([
    db
      .select()
      .from(members)
      .where(eq(members.workspaceId, workspaceId))
      .orderBy(asc(members.joinedAt), asc(members.userId))
      .limit(pageSize)
      .offset((page - 1) * pageSize),
    db.select({ total: count() }).from(members).where(eq(members.workspaceId, workspaceId)),
  ])
  return { data: rows.map(view), page, pageSize, total: Number(total) }
}

export async function addMember(ctx: Ctx, input: { userId: string; name: string; email: string; role: Role }): Promise<MemberView> {
  const { db } = ctx
  const actor = memberOf(ctx)
  if (input.role === 'owner' && actor.role !== 'owner') throw ownerOnly('grant the owner role')
  const [row] = await db
    .insert(members)
    .values({ workspaceId: actor.workspaceId, userId: input.userId, name: input.name, email: input.email, role: input.role })
    .onConflictDoNothing()
    .returning()
  if (!row) throw conflict('MEMBER_EXISTS', 'A member with this userId already exists in this workspace')
  // This replica may hold a cached "not a member" answer for the user.
  ctx.members.invalidate(actor.workspaceId, input.userId)
  return view(row)
}

/**
 * Locks, in one order (user_id), the workspace's active owners and then the target row, and
 * reads the actor's current role. Concurrent demotions/removals of the last two owners queue
 * on these locks; the second one re-reads the owner set after the first commits and gets 409.
 */
async function lockForChange(tx: Db, actor: MemberCaller, userId: string) {
  const owners = await tx
    .select({ userId: members.userId })
    .from(members)
    .where(and(eq(members.workspaceId, actor.workspaceId), eq(members.role, 'owner'), eq(members.status, 'active')))
    .orderBy(asc(members.userId))
    .for('update')
  const [target] = await tx
    .select()
    .from(members)
    .where(and(eq(members.workspaceId, actor.workspaceId), eq(members.userId, userId)))
    .for('update')
  if (!target) throw memberNotFound()
  // The actor's role as of now, not as of the (short-lived) membership cache.
  const [me] = await tx
    .select({ role: members.role, status: members.status })
    .from(members)
    .where(and(eq(members.workspaceId, actor.workspaceId), eq(members.userId, actor.userId)))
  if (!me || me.status !== 'active' || me.role === 'agent') throw forbidden('Missing permission members:manage', 'FORBIDDEN')
  return { activeOwners: owners.length, target, actorRole: me.role }
}

const isActiveOwner = (r: { role: Role; status: Status }) => r.role === 'owner' && r.status === 'active'

export async function updateMember(ctx: Ctx, userId: string, patch: { role?: Role; status?: Status }): Promise<MemberView> {
  const actor = memberOf(ctx)
  const row = await ctx.db.transaction(async (tx) => {
    const { activeOwners, target, actorRole } = await lockForChange(tx, actor, userId)
    if (target.role === 'owner' && actorRole !== 'owner') throw ownerOnly("change an owner's membership")
    if (patch.role === 'owner' && target.role !== 'owner' && actorRole !== 'owner') throw ownerOnly('grant the owner role')
    const next = { role: patch.role ?? target.role, status: patch.status ?? target.status }
    if (isActiveOwner(target) && !isActiveOwner(next) && activeOwners <= 1) throw lastOwner()
    const [updated] = await tx
      .update(members)
      .set(next)
      .where(and(eq(members.workspaceId, actor.workspaceId), eq(members.userId, userId)))
      .returning()
    return updated
  })
  ctx.members.invalidate(actor.workspaceId, userId)
  return view(row)
}

export async function removeMember(ctx: Ctx, userId: string): Promise<void> {
  const actor = memberOf(ctx)
  await ctx.db.transaction(async (tx) => {
    const { activeOwners, target, actorRole } = await lockForChange(tx, actor, userId)
    if (target.role === 'owner' && actorRole !== 'owner') throw ownerOnly('remove an owner')
    if (isActiveOwner(target) && activeOwners <= 1) throw lastOwner()
    await tx.delete(members).where(and(eq(members.workspaceId, actor.workspaceId), eq(members.userId, userId)))
  })
  ctx.members.invalidate(actor.workspaceId, userId)
}
