import type { Caller, MemberCaller, VisitorCaller } from '../auth/callers.js'
import type { Fragment, Sql } from '../db/client.js'
import { rooms } from '../events.js'
import type { ConversationView, MessageView } from '../../schemas/conversations.js'
import type { Ctx } from '../context.js'

/**
 * Who sees what: the one rule for which conversations a caller sees (conversationVisibleTo), and
 * the one place that decides what a visitor may see of a conversation's messages. Private notes
 * (`private: true`, API.md section 12) are for the workspace's members only: every path that
 * shows messages (lists, the message:new fan-out, transcripts, previews, public routes) asks here.
 * Previews and the public routes need no filter because a note never moves lastMessageAt,
 * lastMessagePreview, updatedAt or a counter (src/conversations/messages.ts).
 */

/**
 * Who is reading: the workspace's members, or anyone else. A transcript e-mail is read outside
 * Parley whoever asked for it, so it is `outside` too.
 */
export type Audience = 'members' | 'outside'

export const audienceOf = (caller: Caller): Audience => (caller.kind === 'member' ? 'members' : 'outside')

/** The condition on `messages` (unaliased) that keeps what `audience` may read. */
export function visibleMessages(sql: Sql, audience: Audience): Fragment {
  return audience === 'members' ? sql`` : sql`AND NOT private`
}

/**
 * A conversation as `audience` may see it: labels and priority are the team's own triage (API.md
 * section 17, docs/triage.md), so outside the workspace they read as none, like private notes; so
 * is the service level (section 18, docs/sla.md).
 */
export function conversationFor<C extends Pick<ConversationView, 'labels' | 'priority' | 'sla'>>(c: C, audience: Audience): C {
  return audience === 'members' ? c : { ...c, labels: [], priority: null, sla: null }
}

/**
 * The rooms a new message goes to: a note never reaches the guest's room; a private team's
 * conversation reaches only who may see it (conversationRooms below).
 */
export async function messageRooms(
  sql: Sql,
  conversation: { workspaceId: string; guestId: string; teamId?: string | null },
  message: { private: boolean },
): Promise<string[]> {
  return conversationRooms(sql, conversation, message.private)
}

/**
 * message:new for a new message whose files may include members-only ones (a mail's
 * original.eml, API.md section 19): members get every file, the guest's room the message without
 * them; one publish when nothing is hidden.
 */
export async function publishNewMessage(
  ctx: Pick<Ctx, 'sql' | 'events'>,
  conversation: { id: string; workspaceId: string; guestId: string; teamId?: string | null },
  message: MessageView,
  files: { id: string; private: boolean }[],
): Promise<void> {
  const hidden = new Set(files.filter((f) => f.private).map((f) => f.id))
  if (message.private || hidden.size === 0) {
    ctx.events.publish(await messageRooms(ctx.sql, conversation, message), 'message:new', { conversationId: conversation.id, message })
    return
  }
  ctx.events.publish(await conversationRooms(ctx.sql, conversation, true), 'message:new', { conversationId: conversation.id, message })
  const outside = { ...message, attachments: message.attachments.filter((a) => !hidden.has(a.id)) }
  ctx.events.publish([rooms.guest(conversation.guestId)], 'message:new', { conversationId: conversation.id, message: outside })
}

/** Who is looking: any Caller, or a list's member given by workspace and user (bench scripts). */
export type Viewer =
  | Pick<MemberCaller, 'kind' | 'workspaceId' | 'userId'>
  | Pick<VisitorCaller, 'kind' | 'workspaceId' | 'guestId'>
  | Exclude<Caller, MemberCaller | VisitorCaller>


/**
 * The one rule for who sees a conversation (docs/architecture.md): a member, the live
 * conversations of its workspace; a visitor, the live conversations of its own guest; anyone
 * else, none. Every statement that reads a conversation for a caller puts this condition in its
 * WHERE, so a rule added here (private teams) holds on every path. `table` is how the statement
 * names `conversations` (its alias `c`, or the table itself); `plan` how the workspace is bound
 * (below).
 */
export function conversationVisibleTo(sql: Sql, caller: Viewer, table: 'c' | 'conversations' = 'conversations', plan: 'per-value' | 'once' = 'per-value'): Fragment {
  const t = sql.unsafe(table)
  if (caller.kind === 'member') {
    // plan 'once': the workspace is bound as an InitPlan value, which the planner cannot read, so
    // the statement's plan is the same for every workspace and PostgreSQL keeps the generic plan
    // of a prepared statement instead of planning it anew on each execution (docs/lists.md,
    // "Deep pages"). Only for statements whose best plan does not depend on the workspace's size.
    const ws = plan === 'once' ? sql`(SELECT ${caller.workspaceId}::uuid)` : sql`${caller.workspaceId}`
    // Private teams (API.md section 16): an agent outside the team does not see its conversations.
    return sql`${t}.workspace_id = ${ws} AND ${t}.deleted_at IS NULL
      AND (${t}.team_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM teams pt WHERE pt.id = ${t}.team_id AND pt.private
          AND NOT EXISTS (SELECT 1 FROM team_members ptm WHERE ptm.team_id = pt.id AND ptm.user_id = ${caller.userId})
          AND NOT EXISTS (SELECT 1 FROM members pm WHERE pm.workspace_id = pt.workspace_id AND pm.user_id = ${caller.userId} AND pm.role IN ('owner', 'admin'))))`
  }
  if (caller.kind === 'visitor') {
    return sql`${t}.workspace_id = ${caller.workspaceId} AND ${t}.deleted_at IS NULL AND ${t}.guest_id = ${caller.guestId}::uuid`
  }
  return sql`false`
}

/*
 * Private teams (API.md section 16): a private team's conversations are seen only by the team's
 * members and by owners and admins. The rule is here once: `conversationVisibleTo` above holds it for every
 * statement, `hiddenTeams` names what a caller may not see (unread counters subtract them), `conversationRooms` picks the
 * sockets an event about a conversation may reach.
 */

/** The private teams whose conversations the caller may not see (none for owners, admins and visitors). */
export async function hiddenTeams(ctx: { sql: Sql; caller: Caller }): Promise<string[]> {
  const c = ctx.caller
  if (c.kind !== 'member' || c.role !== 'agent') return []
  const rows = await ctx.sql<{ id: string }[]>`
    SELECT t.id FROM teams t
    WHERE t.workspace_id = ${c.workspaceId} AND t.private
      AND NOT EXISTS (SELECT 1 FROM team_members tm WHERE tm.team_id = t.id AND tm.user_id = ${c.userId})`
  return rows.map((r) => r.id)
}

/** The members' rooms of a conversation: conversationRooms(sql, c, true), or a batch's memo of it (src/conversations/lifecycle.ts). */
export type MembersRooms = (conversation: { workspaceId: string; guestId: string; teamId?: string | null }) => Promise<string[]>

/**
 * The rooms an event about a conversation goes to: its workspace's members (or, for a private
 * team's, that team's members and the owners and admins, one member room each) and, unless
 * `membersOnly`, its guest.
 */
export async function conversationRooms(
  sql: Sql,
  conversation: { workspaceId: string; guestId: string; teamId?: string | null },
  membersOnly = false,
): Promise<string[]> {
  const guest = membersOnly ? [] : [rooms.guest(conversation.guestId)]
  if (!conversation.teamId) return [rooms.workspace(conversation.workspaceId), ...guest]
  const viewers = await sql<{ userId: string; private: boolean }[]>`
    SELECT m.user_id AS "userId", t.private FROM teams t
    JOIN members m ON m.workspace_id = t.workspace_id
    WHERE t.id = ${conversation.teamId} AND t.private
      AND (m.role IN ('owner', 'admin') OR EXISTS (SELECT 1 FROM team_members tm WHERE tm.team_id = t.id AND tm.user_id = m.user_id))`
  if (viewers.length === 0) {
    const [team] = await sql<{ private: boolean }[]>`SELECT private FROM teams WHERE id = ${conversation.teamId}`
    if (!team?.private) return [rooms.workspace(conversation.workspaceId), ...guest]
  }
  return [...viewers.map((v) => rooms.member(conversation.workspaceId, v.userId)), ...guest]
}
