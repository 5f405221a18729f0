import { randomUUID } from 'node:crypto'
import type { Sql } from '../db/client.js'
import type { AssignmentAction, AssignmentReason } from '../db/schema.js'

/**
 * A history entry whose previous agent is the locked row's. Its time is taken under the row lock
 * and kept strictly after the conversation's previous entry, so "newest first" is the lock order
 * even when the transactions started in another order. `by` is null for routing and removals
 * (API.md section 16: `reason` says why).
 */
export async function addHistory(
  sql: Sql,
  row: { id: string; workspaceId: string; assignedAgentId: string | null },
  action: AssignmentAction,
  agentId: string | null,
  by: string | null,
  reason: AssignmentReason,
) {
  await addHistories(sql, row.workspaceId, action, by, reason, [{ row, agentId }])
}

/**
 * The same entry (action, by, reason) for several locked conversations of one workspace, in one
 * statement (a routing pass assigns a batch: docs/routing.md, "Latency").
 */
export async function addHistories(
  sql: Sql,
  workspaceId: string,
  action: AssignmentAction,
  by: string | null,
  reason: AssignmentReason,
  entries: { row: { id: string; assignedAgentId: string | null }; agentId: string | null }[],
) {
  if (entries.length === 0) return
  await sql`
    INSERT INTO assignment_history (id, workspace_id, conversation_id, action, agent_id, previous_agent_id, by_user_id, reason, created_at)
    SELECT x.id, ${workspaceId}, x.conversation_id, ${action}, x.agent_id, x.previous_agent_id, ${by}, ${reason},
           GREATEST(clock_timestamp(), COALESCE((SELECT max(h.created_at) FROM assignment_history h WHERE h.conversation_id = x.conversation_id)
                                                + interval '1 microsecond', '-infinity'))
    FROM unnest(${entries.map(() => randomUUID())}::uuid[], ${entries.map((e) => e.row.id)}::uuid[],
                ${entries.map((e) => e.agentId)}::text[], ${entries.map((e) => e.row.assignedAgentId)}::text[])
         AS x(id, conversation_id, agent_id, previous_agent_id)`
}
