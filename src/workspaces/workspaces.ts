import { randomUUID } from 'node:crypto'
import { and, asc, eq } from 'drizzle-orm'
import { userOf, type Ctx } from '../context.js'
import type { Role } from '../auth/permissions.js'
import { members, workspaces } from '../db/schema.js'
import { iso } from '../time.js'

/** Names in the token may be longer than the contract allows for a member's name. */
const clip = (s: string | undefined, max: number) => (s && s.trim() ? s.trim().slice(0, max) : undefined)

/**
 * Creates a workspace with the caller as its only (active) owner, in one transaction: a
 * workspace never exists without an owner.
 */
export async function createWorkspace(ctx: Ctx, input: { name: string; ownerName?: string; ownerEmail?: string }) {
  const identity = userOf(ctx)
  const id = randomUUID()
  const ownerName = input.ownerName ?? clip(identity.name, 200) ?? clip(identity.email, 200) ?? identity.userId.slice(0, 200)
  const ownerEmail = input.ownerEmail ?? (identity.email && identity.email.length <= 254 ? identity.email : '')
  const row = await ctx.db.transaction(async (tx) => {
    const [ws] = await tx.insert(workspaces).values({ id, name: input.name }).returning()
    await tx.insert(members).values({ workspaceId: id, userId: identity.userId, name: ownerName, email: ownerEmail, role: 'owner' })
    return ws
  })
  return { id: row.id, name: row.name, createdAt: iso(row.createdAt) }
}

/** The caller's active memberships, oldest workspace first (served by members_user_idx). */
export async function listWorkspaces(ctx: Ctx) {
  const { userId } = userOf(ctx)
  const rows = await ctx.db
    .select({ id: workspaces.id, name: workspaces.name, role: members.role, createdAt: workspaces.createdAt })
    .from(members)
    .innerJoin(workspaces, eq(workspaces.id, members.workspaceId))
    .where(and(eq(members.userId, userId), eq(members.status, 'active')))
    .orderBy(asc(workspaces.createdAt), asc(workspaces.id))
  return rows.map((r) => ({ id: r.id, name: r.name, role: r.role as Role, createdAt: iso(r.createdAt) }))
}
