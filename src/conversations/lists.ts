import { memberOf, type Ctx } from '../context.js'
import { keysetPage, type CursorParams, type Page } from '../cursor.js'
import type { Query, Sql } from '../db/client.js'
import type { ConversationStatus } from '../db/schema.js'
import { badRequest, guestNotFound } from '../errors.js'
import { isUuid } from '../uuid.js'
import { audienceOf, conversationFor, conversationVisibleTo, type Viewer } from './visibility.js'
import { CONVERSATION_FROM, CONVERSATION_SELECT, toConversationView, type ConversationRecord } from './view.js'
import type { ConversationView } from '../../schemas/conversations.js'

/**
 * The conversation lists (GET /conversations, /Myconversation, /closed, guest history), as keyset
 * pages. Every query is one index range scan with a LIMIT (docs/lists.md maps index to query):
 *
 * - The sort key is (t, id), t one timestamp column, compared as a row against the cursor's
 *   values. The cursor keeps t as the text Postgres sent (microseconds), so ties never skip rows.
 * - "Pinned first" is served by indexes that lead with (workspace_id, pinned). A descending list
 *   (the default, and sortBy=priority) is one backward range scan: (pinned, t, id) descending is
 *   the index's order reversed, so pinned rows come first by themselves. An ascending list reads the
 *   pinned section, then the unpinned one, each a range scan, as two queries (the second only when
 *   the first did not fill the page): one (pinned DESC, t ASC) scan no index could give. No Sort
 *   node in any direction.
 */

export type ListKind = 'open' | 'mine' | 'closed'
export type SortBy = 'lastMessageAt' | 'createdAt' | 'updatedAt' | 'closedAt' | 'priority' | 'slaDueAt'
/** GET /conversations' `status` (section 17): OPEN (default), PENDING, SNOOZED, or the three. */
export type OpenListStatus = 'open' | 'pending' | 'snoozed' | 'active'
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
  /**
   * /Myconversation: a ConversationStatus (RESOLVED and CLOSED both mean "closed": CLOSED is the
   * legacy spelling). GET /conversations: an OpenListStatus. Ignored on /closed.
   */
  status?: ConversationStatus | OpenListStatus
  /** Section 17 filters, as the query string has them: comma-separated label ids (all of them, up to 5). */
  labelIds?: string
  /** Comma-separated priorities, `none` for no priority. */
  priority?: string
  /** `me`, `none` or a userId. */
  assignee?: string
  /** A team id, or `none` (no team). */
  teamId?: string
  /** Section 18: `breached` (breaches under its policy) or `due` (a target running). */
  sla?: 'breached' | 'due'
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
  // sortBy=priority: priority_rank descending, then this, descending (conv_open_priority_idx).
  priority: 'c.last_message_at',
  // sortBy=slaDueAt: the nearest running due date first (overdue ones are the earliest), none last
  // (conv_open_sla_due_idx, the same expression).
  slaDueAt: "COALESCE(c.sla_due_at, 'infinity'::timestamptz)",
}

/** priority_rank of each `priority` filter value (the generated column's CASE). */
const PRIORITY_RANK: Record<string, number> = { none: 0, low: 1, medium: 2, high: 3, urgent: 4 }

export interface Section {
  /**
   * true / false: only that pinned value (a pinned-first list read in ascending order);
   * 'first': both, pinned first, in one backward scan of the index (a pinned-first list read in
   * descending order: (pinned, t, id) all descending is the index's own order, reversed);
   * undefined: no pinned column (the closed list).
   */
  pinned?: boolean | 'first'
  /**
   * Rows strictly after this (t, id), or (rank, t, id) for sortBy=priority, in the list's direction;
   * with pinned 'first', after (pinned, t, id) or (pinned, rank, t, id). The cursor's key as it is:
   * a section reads only the parts its comparison names.
   */
  after?: At
}

export interface Resolved {
  kind: ListKind
  caller: ListCaller
  sortBy: SortBy
  sortOrder: SortOrder
  readStatus: ReadStatus
  unassignedOnly: boolean
  channelId?: string
  /** /Myconversation's status filter. */
  status?: ConversationStatus
  teamId?: string
  /** GET /conversations' statuses (default OPEN alone). */
  statuses: readonly ConversationStatus[]
  /** Sorted, lower-cased label ids the rows must all hold. */
  labelIds?: string[]
  /** Sorted priority ranks the rows must have one of. */
  priorityRanks?: number[]
  /** The assignee: a userId, or null for unassigned. */
  assignee?: string | null
  sla?: 'breached' | 'due'
}

const OPEN_LIST_STATUSES: Record<OpenListStatus, readonly ConversationStatus[]> = {
  open: ['OPEN'],
  pending: ['PENDING'],
  snoozed: ['SNOOZED'],
  active: ['OPEN', 'PENDING', 'SNOOZED'],
}

/** `labelIds` of the query: 1..5 distinct uuids, comma-separated (a label that does not exist matches nothing). */
function parseLabelIds(text: string): string[] {
  const ids = [...new Set(text.split(',').map((s) => s.trim().toLowerCase()))]
  if (ids.length > 5 || !ids.every(isUuid)) throw badRequest("field 'labelIds' in querystring must be 1..5 comma-separated label ids")
  return ids.sort()
}

function parsePriorities(text: string): number[] {
  const ranks = [...new Set(text.split(',').map((s) => PRIORITY_RANK[s.trim()]))]
  if (ranks.some((r) => r === undefined)) throw badRequest("field 'priority' in querystring must be comma-separated low, medium, high, urgent or none")
  return (ranks as number[]).sort()
}

/** The list's effective parameters (defaults applied). */
export function resolveList(kind: ListKind, caller: ListCaller, q: ListQuery): Resolved {
  const sortBy = q.sortBy ?? (kind === 'closed' ? 'closedAt' : 'lastMessageAt')
  if (sortBy === 'closedAt' && kind !== 'closed') throw badRequest("field 'sortBy' in querystring must be lastMessageAt, createdAt, updatedAt or priority")
  if ((sortBy === 'priority' || sortBy === 'slaDueAt') && kind === 'closed') throw badRequest("field 'sortBy' in querystring must be closedAt, lastMessageAt, createdAt or updatedAt")
  const openStatus = kind === 'open' ? ((q.status as OpenListStatus | undefined) ?? 'open') : undefined
  if (openStatus !== undefined && !(openStatus in OPEN_LIST_STATUSES)) throw badRequest("field 'status' in querystring must be open, pending, snoozed or active")
  const assignee = q.assignee === undefined ? undefined : q.assignee === 'me' ? caller.userId : q.assignee === 'none' ? null : q.assignee
  return {
    kind,
    caller,
    sortBy,
    // sortOrder does not apply to sortBy=priority (urgent first, newest message first).
    sortOrder: sortBy === 'priority' ? 'desc' : sortBy === 'slaDueAt' ? 'asc' : (q.sortOrder ?? 'desc'),
    readStatus: q.readStatus ?? 'all',
    unassignedOnly: q.unassignedOnly ?? false,
    channelId: q.channelId?.toLowerCase(),
    status: kind === 'mine' ? (q.status as ConversationStatus | undefined) : undefined,
    statuses: openStatus ? OPEN_LIST_STATUSES[openStatus] : [],
    labelIds: q.labelIds !== undefined ? parseLabelIds(q.labelIds) : undefined,
    priorityRanks: q.priority !== undefined ? parsePriorities(q.priority) : undefined,
    assignee: kind === 'mine' ? undefined : assignee,
    teamId: q.teamId?.toLowerCase(),
    sla: q.sla,
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
    // Section 17's parameters; left out (undefined) when not given, so older cursors stay valid.
    ss: r.kind === 'open' && r.statuses.join() !== 'OPEN' ? r.statuses.join() : undefined,
    lb: r.labelIds?.join(),
    pr: r.priorityRanks?.join(),
    as: r.assignee === undefined ? undefined : r.assignee,
    tm: r.teamId,
    sl: r.sla,
  }
}

/** sortBy=priority keys on (pinned, rank, t, id); other pinned-first lists on (pinned, t, id). */
const byPriority = (r: Resolved) => r.sortBy === 'priority'

const pinnedFirst = (kind: ListKind) => kind !== 'closed'

/**
 * Whether a list reads its page's keys apart from its rows (docs/lists.md, "Keys, then rows"):
 * postgres.js prepares every statement, and Postgres re-plans a prepared statement on every
 * execution (a custom plan) when its generic plan is estimated dearer than the custom ones, as
 * for the label and team filters (a label's generic plan is the GIN index at a guessed 0.5%; a
 * team's estimate from ndistinct differs from the value's). Planning the whole page (five tables,
 * the select list's sub-queries) took ~1.3 ms, more than running it; the keys statement alone plans
 * in ~0.5 ms, and the rows statement (pageRowsQuery) has a generic plan. The other lists keep
 * their generic plans and read keys and rows in one statement (one round trip fewer per page).
 */
export const keysApart = (r: Resolved) => r.labelIds !== undefined || r.teamId !== undefined

/**
 * One section's query: a range scan of one list index, newest or oldest first, after the cursor:
 * the page's keys with their rows, or the keys alone on `conversations` when keysApart. Exported
 * (not awaited) so the EXPLAIN script and the raw-SQL ceiling run exactly the query the route runs.
 */
export function sectionQuery(sql: Sql, r: Resolved, section: Section, limit: number): Query<SectionRow[]> {
  const t = sql.unsafe(SORT_EXPR[r.sortBy])
  const dir = sql.unsafe(r.sortOrder === 'desc' ? 'DESC' : 'ASC')
  const cmp = sql.unsafe(r.sortOrder === 'desc' ? '<' : '>')
  // Status literals are fixed text of this module (sql.unsafe), so each status list matches its
  // partial index's predicate (conv_open_*, conv_active_*) as the planner needs.
  const scope =
    r.kind === 'open'
      ? r.statuses.length === 1
        ? sql`c.status = ${sql.unsafe(`'${r.statuses[0]}'`)}`
        : sql`c.status IN ('OPEN', 'PENDING', 'SNOOZED')`
      : r.kind === 'closed'
        ? sql`c.status IN ('RESOLVED', 'CLOSED')`
        : r.status === 'RESOLVED' || r.status === 'CLOSED'
          ? sql`c.assigned_agent_id = ${r.caller.userId} AND c.status IN ('RESOLVED', 'CLOSED')`
          : r.status
            ? sql`c.assigned_agent_id = ${r.caller.userId} AND c.status = ${sql.unsafe(`'${r.status}'`)}`
            : sql`c.assigned_agent_id = ${r.caller.userId}`
  const both = section.pinned === 'first'
  const pinned = typeof section.pinned !== 'boolean' ? sql`` : section.pinned ? sql`AND c.pinned = true` : sql`AND c.pinned = false`
  const channel = r.channelId ? sql`AND c.channel_id = ${r.channelId}` : sql``
  const unassigned = r.unassignedOnly ? sql`AND c.assigned_agent_id IS NULL` : sql``
  const read = r.readStatus === 'read' ? sql`AND c.unread_count = 0` : r.readStatus === 'unread' ? sql`AND c.unread_count > 0` : sql``
  const labels = r.labelIds ? sql`AND c.label_ids @> ${r.labelIds}::uuid[]` : sql``
  const priority = r.priorityRanks ? sql`AND c.priority_rank = ANY(${r.priorityRanks}::smallint[])` : sql``
  const assignee = r.assignee === undefined ? sql`` : r.assignee === null ? sql`AND c.assigned_agent_id IS NULL` : sql`AND c.assigned_agent_id = ${r.assignee}`
  // The cursor's values are InitPlan values (`(SELECT $n)`): they only position the index scan, and
  // a planner that read them would plan every deep page anew (docs/lists.md, "Deep pages").
  // The key's columns against the cursor's: (pinned,) (priority_rank,) t, id.
  const a = section.after
  const after = !a
    ? sql``
    : sql`AND (${both ? sql`c.pinned, ` : sql``}${byPriority(r) ? sql`c.priority_rank, ` : sql``}${t}, c.id) ${cmp} (${
        both ? sql`(SELECT ${a.pinned ?? false}::boolean), ` : sql``
      }${byPriority(r) ? sql`(SELECT ${a.rank ?? 0}::smallint), ` : sql``}(SELECT ${a.t}::timestamptz), (SELECT ${a.id}::uuid))`
  const pinnedOrder = both ? sql`c.pinned DESC,` : sql``
  const order = byPriority(r) ? sql`${pinnedOrder} c.priority_rank DESC, ${t} DESC, c.id DESC` : sql`${pinnedOrder} ${t} ${dir}, c.id ${dir}`
  const sla =
    r.sla === 'due'
      ? sql`AND c.sla_due_at IS NOT NULL`
      : r.sla === 'breached'
        ? sql`AND c.sla_policy_id IS NOT NULL AND EXISTS (SELECT 1 FROM sla_breaches sb WHERE sb.conversation_id = c.id AND sb.policy_id = c.sla_policy_id)`
        : sql``
  const team = r.teamId === 'none' ? sql`AND c.team_id IS NULL` : r.teamId ? sql`AND c.team_id = ${r.teamId}::uuid` : sql``
  // The workspace too, unless a label filter is there: the label's plan (its posting list or the
  // walk) depends on how many of the workspace's rows hold it, so that statement is planned per value.
  const visible = conversationVisibleTo(sql, { kind: 'member', ...r.caller }, 'c', r.labelIds ? 'per-value' : 'once')
  const select = keysApart(r)
    ? sql`c.id, c.pinned, ${t} AS "sortValue", c.priority_rank AS "sortRank" FROM conversations c`
    : sql`${sql.unsafe(CONVERSATION_SELECT)}, ${t} AS "sortValue", c.priority_rank AS "sortRank" FROM ${sql.unsafe(CONVERSATION_FROM)}`
  return sql<SectionRow[]>`
    SELECT ${select}
    WHERE ${visible} AND ${scope}
      ${pinned} ${channel} ${unassigned} ${read} ${labels} ${priority} ${assignee} ${team} ${sla} ${after}
    ORDER BY ${order}
    LIMIT ${lit(sql, limit)}`
}

/**
 * The rows of a page's keys (keysApart), in any order (pageRows orders them by the keys). The same
 * text for every list, filter and page, and a plan that does not depend on the ids: one generic
 * plan per connection. The visibility rule holds here too.
 */
export function pageRowsQuery(sql: Sql, caller: ListCaller, ids: string[]): Query<ConversationRecord[]> {
  return sql<ConversationRecord[]>`
    SELECT ${sql.unsafe(CONVERSATION_SELECT)}
    FROM ${sql.unsafe(CONVERSATION_FROM)}
    WHERE c.id = ANY(${ids}::uuid[]) AND ${conversationVisibleTo(sql, { kind: 'member', ...caller }, 'c')}`
}

/**
 * The page's keys with their rows, in the keys' order. When keysApart, the rows are read by id: a
 * row deleted or hidden since its key was read has `row: null` and is left out of the page, while
 * the cursor (taken from the keys) still moves past it, so the walk neither ends early nor repeats.
 */
export async function pageRows(sql: Sql, r: Resolved, keys: SectionRow[]): Promise<PageRow[]> {
  if (!keysApart(r)) return keys.map((k) => keyWith(k, k as ListKey & ConversationRecord))
  if (keys.length === 0) return []
  const byId = new Map((await pageRowsQuery(sql, r.caller, keys.map((k) => k.id))).map((row) => [row.id, row]))
  return keys.map((k) => keyWith(k, byId.get(k.id) ?? null))
}

/**
 * A page key with its row. The key's four fields only: spreading a whole row (some 35 columns)
 * into a new object per row was ~7% of what a list page allocates (docs/lists.md).
 */
function keyWith(k: ListKey, row: ConversationRecord | null): PageRow {
  return { id: k.id, pinned: k.pinned, sortValue: k.sortValue, sortRank: k.sortRank, row }
}

/**
 * The page size as a literal: a prepared statement's generic plan would otherwise guess the LIMIT
 * (10% of the rows) and could trade the ordered index scan for a sort. Validated integer only.
 */
function lit(sql: Sql, limit: number) {
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new Error(`bad limit ${limit}`)
  return sql.unsafe(String(limit))
}

/** A page key: what the cursor needs of a row. */
export type ListKey = { id: string; pinned: boolean; sortValue: string; sortRank: number }
/** A section's row: the key alone (keysApart) or with the conversation's row. */
export type SectionRow = ListKey | (ListKey & ConversationRecord)
/** A key with its row (null: gone between the key's read and the row's). */
export type PageRow = ListKey & { row: ConversationRecord | null }

/** A page's position: the cursor's key (undefined on page 1). */
export type At = { pinned?: boolean; rank?: number; t: string; id: string }

/**
 * The sections a page reads, in order, given where the cursor stopped: one for the closed list and
 * for every descending pinned-first list (one backward scan, pinned rows first), the pinned then
 * the unpinned section for an ascending one.
 */
export function pageSections(r: Resolved, at?: At): Section[] {
  if (!pinnedFirst(r.kind)) return [{ after: at }]
  if (r.sortOrder === 'desc') return [{ pinned: 'first', after: at }]
  if (!at) return [{ pinned: true }, { pinned: false }]
  return at.pinned ? [{ pinned: true, after: at }, { pinned: false }] : [{ pinned: false, after: at }]
}

/**
 * The keys of a page (`want` = limit + 1: the last one only says another page exists), section by
 * section while the page is not full. Exported so the raw-SQL ceiling runs exactly the route's statements.
 */
export async function pageKeys(sql: Sql, r: Resolved, at: At | undefined, want: number): Promise<SectionRow[]> {
  const keys: SectionRow[] = []
  for (const section of pageSections(r, at)) {
    if (keys.length >= want) break
    keys.push(...(await sectionQuery(sql, r, section, want - keys.length)))
  }
  return keys
}

/** A page of GET /conversations (open), /Myconversation (mine) or /closed. */
export async function listConversations(ctx: Ctx, kind: ListKind, q: ListQuery): Promise<Page<ConversationView>> {
  const { sql } = ctx
  const { workspaceId, userId } = memberOf(ctx)
  const r = resolveList(kind, { workspaceId, userId }, q)
  // Pinned-first lists key on (pinned, t, id), sortBy=priority on (pinned, rank, t, id), the
  // closed list on (t, id).
  type Shape = ['bool', 'int', 'timestamp', 'uuid'] | ['bool', 'timestamp', 'uuid'] | ['timestamp', 'uuid']
  const shape: Shape = byPriority(r) ? ['bool', 'int', 'timestamp', 'uuid'] : pinnedFirst(kind) ? ['bool', 'timestamp', 'uuid'] : ['timestamp', 'uuid']
  const page = await keysetPage<PageRow, Shape>(ctx, {
    cursor: q.cursor,
    params: cursorParams(r),
    key: shape,
    limit: q.limit,
    fetch: async (key, want) => {
      const at: At | undefined = !key
        ? undefined
        : key.length === 4
          ? { pinned: key[0], rank: key[1], t: key[2], id: key[3] }
          : key.length === 3
            ? { pinned: key[0], t: key[1], id: key[2] }
            : { t: key[0], id: key[1] }
      const keys = await pageKeys(sql, r, at, want)
      // The key past the page (want = limit + 1) only says that another page exists: its row is not read.
      const shown = await pageRows(sql, r, keys.slice(0, want - 1))
      if (keys.length === want) shown.push(keyWith(keys[want - 1]!, null))
      return shown
    },
    keyOf: (row) =>
      byPriority(r) ? [row.pinned, row.sortRank, row.sortValue, row.id] : pinnedFirst(kind) ? [row.pinned, row.sortValue, row.id] : [row.sortValue, row.id],
  })
  return { data: page.data.flatMap((k) => (k.row ? [toConversationView(k.row)] : [])), nextCursor: page.nextCursor }
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
  return { data: page.data.map((c) => conversationFor(toConversationView(c), audienceOf(ctx.caller))), nextCursor: page.nextCursor }
}

/** Does this guest exist in the workspace? (history of an unknown guest is 404, not an empty list) */
async function guestExists(sql: Sql, workspaceId: string, guestId: string): Promise<boolean> {
  const [row] = await sql`SELECT 1 FROM guests WHERE id = ${guestId} AND workspace_id = ${workspaceId}`
  return row !== undefined
}
