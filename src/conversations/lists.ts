import { memberOf, type Ctx } from '../context.js'
import { keysetPage, type CursorParams, type Page } from '../cursor.js'
import type { Query, Sql } from '../db/client.js'
import type { ConversationStatus } from '../db/schema.js'
import { badRequest, guestNotFound } from '../errors.js'
import { isUuid } from '../uuid.js'
import { conversationVisibleTo, type Viewer } from './visibility.js'
import { CONVERSATION_FROM, CONVERSATION_SELECT, toConversationView, type ConversationRecord } from './view.js'
import type { ConversationView } from '../../schemas/conversations.js'

/**
 * The conversation lists (GET /conversations, /Myconversation, /closed, guest history), as keyset
 * pages. Every query is one index range scan with a LIMIT (docs/lists.md maps index to query):
 *
 * - The sort key is (t, id), t one timestamp column, compared as a row against the cursor's
 *   values. The cursor keeps t as the text Postgres sent (microseconds), so ties never skip rows.
 * - "Pinned first" is served by indexes that lead with (workspace_id, pinned): the page reads the
 *   pinned section, then the unpinned one, each a range scan in the requested direction, as two
 *   queries (the second only when the first did not fill the page). No Sort node in either
 *   direction, which one (pinned DESC, t ASC) index could not give.
 */

export type ListKind = 'open' | 'mine' | 'closed'
export type SortBy = 'lastMessageAt' | 'createdAt' | 'updatedAt' | 'closedAt'
export type SortOrder = 'asc' | 'desc'
export type ReadStatus = 'all' | 'read' | 'unread'

export interface ListQuery {
  limit: number
  cursor?: string
  channelId?: string
  unassignedOnly?: boolean
  readStatus?: ReadStatus
  sortBy?: SortBy
  sortOrder?: SortOrder
  /** Only on /Myconversation. RESOLVED and CLOSED both mean "closed" (CLOSED is the legacy spelling). */
  status?: ConversationStatus
}

export interface ListCaller {
  workspaceId: string
  userId: string
}

/** Whitelisted sort expressions; the same expressions are the indexes' key columns. */
const SORT_EXPR: Record<SortBy, string> = {
  lastMessageAt: 'c.last_message_at',
  createdAt: 'c.created_at',
  updatedAt: 'c.updated_at',
  // closed_at is null on some legacy CLOSED imports: they sort as the oldest.
  closedAt: "COALESCE(c.closed_at, '-infinity'::timestamptz)",
}

interface Section {
  /** true / false: only that pinned value (pinned-first lists); undefined: no pinned split. */
  pinned?: boolean
  /** Rows strictly after this (t, id) in the list's direction. */
  after?: { t: string; id: string }
}

export interface Resolved {
  kind: ListKind
  caller: ListCaller
  sortBy: SortBy
  sortOrder: SortOrder
  readStatus: ReadStatus
  unassignedOnly: boolean
  channelId?: string
  status?: ConversationStatus
}

/** The list's effective parameters (defaults applied). */
export function resolveList(kind: ListKind, caller: ListCaller, q: ListQuery): Resolved {
  const sortBy = q.sortBy ?? (kind === 'closed' ? 'closedAt' : 'lastMessageAt')
  if (sortBy === 'closedAt' && kind !== 'closed') throw badRequest("field 'sortBy' in querystring must be lastMessageAt, createdAt or updatedAt")
  return {
    kind,
    caller,
    sortBy,
    sortOrder: q.sortOrder ?? 'desc',
    readStatus: q.readStatus ?? 'all',
    unassignedOnly: q.unassignedOnly ?? false,
    channelId: q.channelId?.toLowerCase(),
    status: kind === 'mine' ? q.status : undefined,
  }
}

/** What a cursor is bound to: a cursor presented with any other value is INVALID_CURSOR. */
function cursorParams(r: Resolved): CursorParams {
  return {
    l: r.kind,
    w: r.caller.workspaceId,
    u: r.kind === 'mine' ? r.caller.userId : undefined,
    s: r.sortBy,
    o: r.sortOrder,
    rs: r.readStatus,
    ua: r.unassignedOnly,
    ch: r.channelId ?? null,
    st: r.status ?? null,
  }
}

const pinnedFirst = (kind: ListKind) => kind !== 'closed'

/**
 * One section's query: a range scan of one list index, newest or oldest first, after the cursor.
 * Exported (not awaited) so the EXPLAIN script plans exactly the query the route runs.
 */
export function sectionQuery(sql: Sql, r: Resolved, section: Section, limit: number): Query<ListRow[]> {
  const t = sql.unsafe(SORT_EXPR[r.sortBy])
  const dir = sql.unsafe(r.sortOrder === 'desc' ? 'DESC' : 'ASC')
  const cmp = sql.unsafe(r.sortOrder === 'desc' ? '<' : '>')
  const scope =
    r.kind === 'open'
      ? sql`c.status = 'OPEN'`
      : r.kind === 'closed'
        ? sql`c.status IN ('RESOLVED', 'CLOSED')`
        : r.status === 'OPEN'
          ? sql`c.assigned_agent_id = ${r.caller.userId} AND c.status = 'OPEN'`
          : r.status
            ? sql`c.assigned_agent_id = ${r.caller.userId} AND c.status IN ('RESOLVED', 'CLOSED')`
            : sql`c.assigned_agent_id = ${r.caller.userId}`
  const pinned = section.pinned === undefined ? sql`` : section.pinned ? sql`AND c.pinned = true` : sql`AND c.pinned = false`
  const channel = r.channelId ? sql`AND c.channel_id = ${r.channelId}` : sql``
  const unassigned = r.unassignedOnly ? sql`AND c.assigned_agent_id IS NULL` : sql``
  const read = r.readStatus === 'read' ? sql`AND c.unread_count = 0` : r.readStatus === 'unread' ? sql`AND c.unread_count > 0` : sql``
  const after = section.after ? sql`AND (${t}, c.id) ${cmp} (${section.after.t}::timestamptz, ${section.after.id}::uuid)` : sql``
  return sql<ListRow[]>`
    SELECT ${sql.unsafe(CONVERSATION_SELECT)}, ${t} AS "sortValue"
    FROM ${sql.unsafe(CONVERSATION_FROM)}
    WHERE ${conversationVisibleTo(sql, { kind: 'member', ...r.caller }, 'c')} AND ${scope}
      ${pinned} ${channel} ${unassigned} ${read} ${after}
    ORDER BY ${t} ${dir}, c.id ${dir}
    LIMIT ${lit(sql, limit)}`
}

/**
 * The page size as a literal: a prepared statement's generic plan would otherwise guess the LIMIT
 * (10% of the rows) and could trade the ordered index scan for a sort. Validated integer only.
 */
function lit(sql: Sql, limit: number) {
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new Error(`bad limit ${limit}`)
  return sql.unsafe(String(limit))
}

type ListRow = ConversationRecord & { sortValue: string }

/** The sections a page reads, in order, given where the cursor stopped. */
function sectionsFor(kind: ListKind, at?: { pinned?: boolean; t: string; id: string }): Section[] {
  const after = at ? { t: at.t, id: at.id } : undefined
  if (!pinnedFirst(kind)) return [{ after }]
  if (!at) return [{ pinned: true }, { pinned: false }]
  return at.pinned ? [{ pinned: true, after }, { pinned: false }] : [{ pinned: false, after }]
}

/** A page of GET /conversations (open), /Myconversation (mine) or /closed. */
export async function listConversations(ctx: Ctx, kind: ListKind, q: ListQuery): Promise<Page<ConversationView>> {
  const { sql } = ctx
  const { workspaceId, userId } = memberOf(ctx)
  const r = resolveList(kind, { workspaceId, userId }, q)
  // Pinned-first lists key on (pinned, t, id), the closed list on (t, id).
  const page = await keysetPage<ListRow, ['bool', 'timestamp', 'uuid'] | ['timestamp', 'uuid']>(ctx, {
    cursor: q.cursor,
    params: cursorParams(r),
    key: pinnedFirst(kind) ? ['bool', 'timestamp', 'uuid'] : ['timestamp', 'uuid'],
    limit: q.limit,
    fetch: async (key, want) => {
      const at = !key ? undefined : key.length === 3 ? { pinned: key[0], t: key[1], id: key[2] } : { t: key[0], id: key[1] }
      const rows: ListRow[] = []
      for (const section of sectionsFor(kind, at)) {
        if (rows.length >= want) break
        rows.push(...(await sectionQuery(sql, r, section, want - rows.length)))
      }
      return rows
    },
    keyOf: (row) => (pinnedFirst(kind) ? [row.pinned, row.sortValue, row.id] : [row.sortValue, row.id]),
  })
  return { data: page.data.map(toConversationView), nextCursor: page.nextCursor }
}

/** That guest's conversations (any status, not deleted), newest first. */
export function guestHistoryQuery(sql: Sql, viewer: Viewer, guestId: string, after: { t: string; id: string } | undefined, limit: number) {
  const cond = after ? sql`AND (c.created_at, c.id) < (${after.t}::timestamptz, ${after.id}::uuid)` : sql``
  return sql<ConversationRecord[]>`
    SELECT ${sql.unsafe(CONVERSATION_SELECT)}
    FROM ${sql.unsafe(CONVERSATION_FROM)}
    WHERE c.guest_id = ${guestId} AND ${conversationVisibleTo(sql, viewer, 'c')} ${cond}
    ORDER BY c.created_at DESC, c.id DESC
    LIMIT ${lit(sql, limit)}`
}

/**
 * GET /conversations/guest/:guestId/history. A member sees any guest of the workspace; a visitor
 * only its own guest. Any other id (unknown, foreign, malformed) is 404 GUEST_NOT_FOUND, never 403.
 */
export async function guestHistory(ctx: Ctx, guestIdParam: string, q: { limit: number; cursor?: string }): Promise<Page<ConversationView>> {
  const { sql } = ctx
  const guestId = guestIdParam.toLowerCase()
  if (!isUuid(guestId)) throw guestNotFound()
  const c = ctx.caller
  let workspaceId: string
  if (c.kind === 'member') {
    workspaceId = c.workspaceId
    if (!(await guestExists(sql, workspaceId, guestId))) throw guestNotFound()
  } else if (c.kind === 'visitor' && c.guestId.toLowerCase() === guestId) {
    workspaceId = c.workspaceId
  } else {
    throw guestNotFound()
  }
  const page = await keysetPage(ctx, {
    cursor: q.cursor,
    params: { l: 'history', w: workspaceId, g: guestId },
    key: ['timestamp', 'uuid'],
    limit: q.limit,
    fetch: (after, take) => guestHistoryQuery(sql, c, guestId, after ? { t: after[0], id: after[1] } : undefined, take),
    keyOf: (row) => [row.createdAt, row.id],
  })
  return { data: page.data.map(toConversationView), nextCursor: page.nextCursor }
}

/** Does this guest exist in the workspace? (history of an unknown guest is 404, not an empty list) */
async function guestExists(sql: Sql, workspaceId: string, guestId: string): Promise<boolean> {
  const [row] = await sql`SELECT 1 FROM guests WHERE id = ${guestId} AND workspace_id = ${workspaceId}`
  return row !== undefined
}
