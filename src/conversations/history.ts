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
  await sql`
    INSERT INTO assignment_history (id, workspace_id, conversation_id, action, agent_id, previous_agent_id, by_user_id, reason, created_at)
    SELECT ${randomUUID()}, ${row.workspaceId}, ${row.id}, ${action}, ${agentId}, ${row.assignedAgentId}, ${by}, ${reason},
           GREATEST(clock_timestamp(), COALESCE(max(h.created_at) + interval '1 microsecond', '-infinity'))
    FROM assignment_history h WHERE h.conversation_id = ${row.id}`
}
