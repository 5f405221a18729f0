import { v7 as uuidv7 } from 'uuid'
import type { ConversationView } from '../../schemas/conversations.js'
import type { CreateViewInput, UpdateViewInput, ViewFiltersInput, ViewView } from '../../schemas/triage.js'
import { can } from '../auth/permissions.js'
import { memberOf, type Ctx } from '../context.js'
import type { Page } from '../cursor.js'
import type { Sql } from '../db/client.js'
import type { ViewScope } from '../db/schema.js'
import { missingPermission, tooManyViews, viewNotFound } from '../errors.js'
import { iso } from '../time.js'
import { isUuid } from '../uuid.js'
import { listConversations, type ListQuery, type OpenListStatus, type SortBy, type SortOrder } from '../conversations/lists.js'
import { teamOfWorkspace } from '../teams/rules.js'
import { checkLabels } from './labels.js'

/**
 * Saved views (API.md section 17): a name and the list parameters of GET /conversations. A member
 * sees the workspace's views and its own personal ones; another member's personal view does not
 * exist for it (404). Personal views are managed by their owner, workspace views by
 * `labels:manage`. At most 100 personal views per member and 100 workspace views per workspace.
 */

export const VIEWS_PER_OWNER = 100
export const VIEWS_PER_WORKSPACE = 100

const COLUMNS = `id, name, scope, filters, sort_by AS "sortBy", sort_order AS "sortOrder", owner_id AS "ownerId", created_at AS "createdAt"`
type ViewRecord = Omit<ViewView, 'createdAt'> & { createdAt: string }
const toView = (r: ViewRecord): ViewView => ({ ...r, createdAt: iso(r.createdAt) })

function mayManage(ctx: Ctx, scope: ViewScope, ownerId: string): boolean {
  const me = memberOf(ctx)
  return scope === 'personal' ? ownerId === me.userId : can(me.role, 'labels:manage')
}

/** GET /views: the workspace's views and the caller's own, oldest first (at most 200). */
export async function listViews(ctx: Ctx): Promise<{ data: ViewView[] }> {
  const me = memberOf(ctx)
  const rows = await ctx.sql<ViewRecord[]>`
    SELECT ${ctx.sql.unsafe(COLUMNS)} FROM views
    WHERE workspace_id = ${me.workspaceId} AND (scope = 'workspace' OR (scope = 'personal' AND owner_id = ${me.userId}))
    ORDER BY created_at, id`
  return { data: rows.map(toView) }
}

/**
 * Labels and the team named by the filters must be the workspace's when the view is written (400
 * INVALID_LABEL, INVALID_TEAM); ids are stored lower-case. Deleted later, they match nothing.
 */
async function checkFilters(sql: Sql, workspaceId: string, filters: ViewFiltersInput | undefined): Promise<ViewFiltersInput> {
  const f = { ...filters }
  if (f.labelIds) f.labelIds = await checkLabels(sql, workspaceId, f.labelIds, 5)
  if (f.teamId && f.teamId !== 'none') f.teamId = await teamOfWorkspace(sql, workspaceId, f.teamId)
  return f
}

/** POST /views. */
export async function createView(ctx: Ctx, input: CreateViewInput): Promise<ViewView> {
  const me = memberOf(ctx)
  const scope = input.scope ?? 'personal'
  if (scope === 'workspace' && !can(me.role, 'labels:manage')) throw missingPermission('labels:manage')
  return ctx.sql.begin(async (sql) => {
    // The caps are counts about data: concurrent creates of one workspace count one after another.
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`parley:views:${me.workspaceId}`}, 0))`
    const [{ n }] = await sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM views
      WHERE workspace_id = ${me.workspaceId} AND scope = ${scope} AND (${scope} = 'workspace' OR owner_id = ${me.userId})`
    if (scope === 'workspace' && n >= VIEWS_PER_WORKSPACE) throw tooManyViews(`A workspace may have at most ${VIEWS_PER_WORKSPACE} workspace views`)
    if (scope === 'personal' && n >= VIEWS_PER_OWNER) throw tooManyViews(`A member may have at most ${VIEWS_PER_OWNER} personal views`)
    const filters = await checkFilters(sql, me.workspaceId, input.filters)
    const [row] = await sql<ViewRecord[]>`
      INSERT INTO views (id, workspace_id, scope, owner_id, name, filters, sort_by, sort_order)
      VALUES (${uuidv7()}, ${me.workspaceId}, ${scope}, ${me.userId}, ${input.name}, ${JSON.stringify(filters)}::jsonb,
              ${input.sortBy ?? 'lastMessageAt'}, ${input.sortOrder ?? 'desc'})
      RETURNING ${sql.unsafe(COLUMNS)}`
    return toView(row)
  })
}

/** The view as the caller may see it (optionally locked), else 404. */
async function findVisible(sql: Sql, ctx: Ctx, id: string, lock = false): Promise<ViewRecord> {
  if (!isUuid(id)) throw viewNotFound()
  const me = memberOf(ctx)
  const [row] = await sql<ViewRecord[]>`
    SELECT ${sql.unsafe(COLUMNS)} FROM views
    WHERE id = ${id} AND workspace_id = ${me.workspaceId} AND (scope = 'workspace' OR owner_id = ${me.userId})
    ${lock ? sql`FOR UPDATE` : sql``}`
  if (!row) throw viewNotFound()
  return row
}

/** PATCH /views/:id: the fields given replace the stored ones (filters as a whole). */
export async function updateView(ctx: Ctx, id: string, patch: UpdateViewInput): Promise<ViewView> {
  const me = memberOf(ctx)
  return ctx.sql.begin(async (sql) => {
    const view = await findVisible(sql, ctx, id, true)
    if (!mayManage(ctx, view.scope, view.ownerId)) throw missingPermission('labels:manage')
    const filters = patch.filters === undefined ? view.filters : await checkFilters(sql, me.workspaceId, patch.filters)
    const [row] = await sql<ViewRecord[]>`
      UPDATE views SET name = ${patch.name ?? view.name}, filters = ${JSON.stringify(filters)}::jsonb,
        sort_by = ${patch.sortBy ?? view.sortBy}, sort_order = ${patch.sortOrder ?? view.sortOrder}, updated_at = clock_timestamp()
      WHERE id = ${id}
      RETURNING ${sql.unsafe(COLUMNS)}`
    return toView(row)
  })
}

/** DELETE /views/:id. */
export async function deleteView(ctx: Ctx, id: string): Promise<void> {
  await ctx.sql.begin(async (sql) => {
    const view = await findVisible(sql, ctx, id, true)
    if (!mayManage(ctx, view.scope, view.ownerId)) throw missingPermission('labels:manage')
    await sql`DELETE FROM views WHERE id = ${id}`
  })
}

/**
 * GET /views/:id/conversations: GET /conversations with the view's parameters, read at each call
 * (`assignee: "me"` is the reader; a deleted label matches nothing). The cursor is bound to the
 * parameters, so one taken before the view changed is INVALID_CURSOR after.
 */
export async function viewConversations(ctx: Ctx, id: string, q: { limit: number; cursor?: string }): Promise<Page<ConversationView>> {
  const view = await findVisible(ctx.sql, ctx, id)
  const f = view.filters
  const query: ListQuery = {
    limit: q.limit,
    cursor: q.cursor,
    status: (f.status ?? 'open') as OpenListStatus,
    channelId: f.channelId,
    teamId: f.teamId,
    labelIds: f.labelIds?.join(','),
    priority: f.priority?.join(','),
    assignee: f.assignee,
    readStatus: f.readStatus,
    unassignedOnly: f.unassignedOnly,
    sortBy: view.sortBy as SortBy,
    sortOrder: view.sortOrder as SortOrder,
  }
  return listConversations(ctx, 'open', query)
}
