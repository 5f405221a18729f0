import type { Caller } from '../auth/callers.js'
import type { Fragment, Sql } from '../db/client.js'
import { rooms } from '../events.js'

/**
 * The one place that decides what a visitor may see of a conversation's messages. Private notes
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
