import type { ConversationView } from '../../schemas/conversations.js'
import type { TeamQueueView } from '../../schemas/teams.js'
import type { Sql } from '../db/client.js'
import { iso } from '../time.js'

/**
 * A team's queue as people see it (API.md section 16): conversations with `queued_at` set, oldest
 * first (conv_team_queue_idx). Routing (./routing.ts) empties it; ./rules.ts fills it.
 */

/** Exits counted for the estimate: fewer than this in 24 hours gives null. */
const MIN_SAMPLES = 5
/** GET /teams/:id/queue answers at most this many. */
export const QUEUE_LIST_MAX = 500
/** Visitors hear of a new position only within the first this-many places. */
export const POSITION_EVENTS_MAX = 100

export async function teamQueue(sql: Sql, teamId: string): Promise<TeamQueueView> {
  const rows = await sql<{ conversationId: string; queuedAt: string }[]>`
    SELECT id AS "conversationId", queued_at AS "queuedAt" FROM conversations
    WHERE team_id = ${teamId} AND queued_at IS NOT NULL AND deleted_at IS NULL
    ORDER BY queued_at, id LIMIT ${QUEUE_LIST_MAX}`
  return { data: rows.map((r, i) => ({ conversationId: r.conversationId, queuedAt: iso(r.queuedAt), position: i + 1 })) }
}

/** The median queue wait of the team's last 24 hours of exits, in whole seconds; null with fewer than 5. */
export async function estimatedWait(sql: Sql, teamId: string): Promise<number | null> {
  const [row] = await sql<{ n: number; median: number | null }[]>`
    SELECT count(*)::int AS n, percentile_cont(0.5) WITHIN GROUP (ORDER BY wait_seconds) AS median
    FROM queue_exits WHERE team_id = ${teamId} AND created_at > now() - interval '24 hours'`
  return row.n >= MIN_SAMPLES && row.median !== null ? Math.round(row.median) : null
}

/** `queue` of a conversation view: its 1-based place and the estimate, or null when it is not queued. */
export async function queueOf(sql: Sql, view: Pick<ConversationView, 'id' | 'teamId' | 'queuedAt'>): Promise<ConversationView['queue']> {
  if (!view.teamId || !view.queuedAt) return null
  const [pos] = await sql<{ position: number }[]>`
    SELECT count(*)::int AS position FROM conversations q, conversations c
    WHERE c.id = ${view.id} AND q.team_id = c.team_id AND q.queued_at IS NOT NULL AND q.deleted_at IS NULL
      AND (q.queued_at, q.id) <= (c.queued_at, c.id)`
  if (!pos || pos.position === 0) return null
  return { position: pos.position, estimatedWaitSeconds: await estimatedWait(sql, view.teamId) }
}

/** Records that a conversation queued since `queuedAt` left the queue for an assignee (in the assigning transaction). */
export async function recordQueueExit(sql: Sql, teamId: string, conversationId: string, queuedAt: string) {
  await recordQueueExits(sql, teamId, [{ id: conversationId, queuedAt }])
}

/** The same for a batch of the team's conversations (a routing pass), in one statement. */
export async function recordQueueExits(sql: Sql, teamId: string, exits: { id: string; queuedAt: string }[]) {
  if (exits.length === 0) return
  await sql`
    INSERT INTO queue_exits (workspace_id, team_id, conversation_id, wait_seconds)
    SELECT t.workspace_id, t.id, x.id, GREATEST(0, extract(epoch FROM clock_timestamp() - x.queued_at))
    FROM teams t, unnest(${exits.map((e) => e.id)}::uuid[], ${exits.map((e) => e.queuedAt)}::text[]::timestamptz[]) AS x(id, queued_at)
    WHERE t.id = ${teamId}`
}
