import { randomUUID } from 'node:crypto'
import type { WorkspaceMembershipView, WorkspaceView } from '../../schemas/workspaces.js'
import type { members, workspaces } from '../db/schema.js'
import { userOf, type Ctx } from '../context.js'
import { iso } from '../time.js'

type WorkspaceRow = typeof workspaces.$inferSelect

/** Names in the token may be longer than the contract allows for a member's name. */
const clip = (s: string | undefined, max: number) => (s && s.trim() ? s.trim().slice(0, max) : undefined)

/**
 * Creates a workspace with the caller as its only (active) owner, in one transaction: a
 * workspace never exists without an owner.
 */
export async function createWorkspace(ctx: Ctx, input: { name: string; ownerName?: string; ownerEmail?: string }): Promise<WorkspaceView> {
  const identity = userOf(ctx)
  const id = randomUUID()
  const ownerName = input.ownerName ?? clip(identity.name, 200) ?? clip(identity.email, 200) ?? identity.userId.slice(0, 200)
  const ownerEmail = input.ownerEmail ?? (identity.email && identity.email.length <= 254 ? identity.email : '')
  const row = await ctx.sql.begin(async (tx) => {
    const [ws] = await tx<WorkspaceRow[]>`
      INSERT INTO workspaces (id, name) VALUES (${id}, ${input.name}) RETURNING id, name, created_at AS "createdAt"`
    await tx`
      INSERT INTO members (workspace_id, user_id, name, email, role)
      VALUES (${id}, ${identity.userId}, ${ownerName}, ${ownerEmail}, 'owner')`
    return ws
  })
  return { id: row.id, name: row.name, createdAt: iso(row.createdAt) }
}

/** The caller's active memberships, oldest workspace first (served by members_user_idx). */
export async function listWorkspaces(ctx: Ctx): Promise<WorkspaceMembershipView[]> {
  const { userId } = userOf(ctx)
  const rows = await ctx.sql<(WorkspaceRow & Pick<typeof members.$inferSelect, 'role'>)[]>`
    SELECT w.id, w.name, m.role, w.created_at AS "createdAt"
    FROM members m JOIN workspaces w ON w.id = m.workspace_id
    WHERE m.user_id = ${userId} AND m.status = 'active'
    ORDER BY w.created_at, w.id`
  return rows.map((r) => ({ ...r, createdAt: iso(r.createdAt) }))
}
