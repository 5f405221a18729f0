import type { Caller, MemberCaller, VisitorCaller } from '../auth/callers.js'
import type { Fragment, Sql } from '../db/client.js'
import { rooms } from '../events.js'

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

/** The rooms a new message goes to: a note never reaches the guest's room. */
export function messageRooms(conversation: { workspaceId: string; guestId: string }, message: { private: boolean }): string[] {
  return message.private ? [rooms.workspace(conversation.workspaceId)] : [rooms.workspace(conversation.workspaceId), rooms.guest(conversation.guestId)]
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
 * names `conversations` (its alias `c`, or the table itself).
 */
export function conversationVisibleTo(sql: Sql, caller: Viewer, table: 'c' | 'conversations' = 'conversations'): Fragment {
  const t = sql.unsafe(table)
  if (caller.kind === 'member') return sql`${t}.workspace_id = ${caller.workspaceId} AND ${t}.deleted_at IS NULL`
  if (caller.kind === 'visitor') {
    return sql`${t}.workspace_id = ${caller.workspaceId} AND ${t}.deleted_at IS NULL AND ${t}.guest_id = ${caller.guestId}::uuid`
  }
  return sql`false`
}
