import { v7 as uuidv7 } from 'uuid'
import type { App } from '../../src/app.js'
import type { SeededGuest, SeededWorkspace } from '../helper.js'

/**
 * Conversations and messages written straight into the database, for the search and
 * transcript tests (the conversation routes are built elsewhere).
 */
export async function seedConversation(
  app: App,
  ws: Pick<SeededWorkspace, 'workspaceId' | 'channelId'>,
  guest: Pick<SeededGuest, 'guestId'>,
  opts: { status?: 'OPEN' | 'RESOLVED' | 'CLOSED'; deleted?: boolean; assignedAgentId?: string } = {},
): Promise<string> {
  const id = uuidv7()
  await app.deps.sql`
    INSERT INTO conversations (id, workspace_id, channel_id, guest_id, status, assigned_agent_id, deleted_at, closed_at)
    VALUES (${id}, ${ws.workspaceId}, ${ws.channelId}, ${guest.guestId}, ${opts.status ?? 'OPEN'},
            ${opts.assignedAgentId ?? null}, ${opts.deleted ? app.deps.sql`now()` : null},
            ${opts.status && opts.status !== 'OPEN' ? app.deps.sql`now()` : null})`
  return id
}

export interface SeedMessage {
  body: string
  senderType?: 'GUEST' | 'AGENT' | 'SYSTEM'
  senderName?: string
  senderId?: string | null
}

/** Messages in the given order, one microsecond apart at least, ids UUIDv7. */
export async function seedMessages(app: App, conversationId: string, list: SeedMessage[]): Promise<string[]> {
  const ids: string[] = []
  const [conv] = await app.deps.sql<{ workspaceId: string; guestId: string }[]>`
    SELECT workspace_id AS "workspaceId", guest_id AS "guestId" FROM conversations WHERE id = ${conversationId}`
  for (const [i, m] of list.entries()) {
    const id = uuidv7()
    ids.push(id)
    const type = m.senderType ?? 'GUEST'
    await app.deps.sql`
      INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
      VALUES (${id}, ${conv!.workspaceId}, ${conversationId}, ${type},
              ${m.senderId !== undefined ? m.senderId : type === 'GUEST' ? conv!.guestId : type === 'AGENT' ? 'idp|agent' : null},
              ${m.senderName ?? (type === 'GUEST' ? 'Gina Guest' : type === 'AGENT' ? 'Agnes Agent' : 'System')},
              ${m.body}, clock_timestamp() + make_interval(secs => ${i} / 1000.0))`
  }
  await app.deps.sql`
    UPDATE conversations SET last_message_at = (SELECT max(created_at) FROM messages WHERE conversation_id = ${conversationId})
    WHERE id = ${conversationId}`
  return ids
}

/** n messages in one INSERT ... SELECT generate_series: alternating guest/agent, body "message <i>". */
export async function seedManyMessages(app: App, conversationId: string, n: number): Promise<void> {
  await app.deps.sql`
    INSERT INTO messages (id, workspace_id, conversation_id, sender_type, sender_id, sender_name, body, created_at)
    SELECT gen_random_uuid(), c.workspace_id, c.id,
           CASE WHEN i % 2 = 0 THEN 'GUEST' ELSE 'AGENT' END,
           CASE WHEN i % 2 = 0 THEN c.guest_id::text ELSE 'idp|agent' END,
           CASE WHEN i % 2 = 0 THEN 'Gina Guest' ELSE 'Agnes Agent' END,
           'message ' || i,
           timestamptz '2026-01-01 00:00:00+00' + make_interval(secs => i / 1000.0)
    FROM conversations c, generate_series(1, ${n}) AS i
    WHERE c.id = ${conversationId}`
}
