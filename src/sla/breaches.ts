import type { Deps } from '../context.js'
import type { SlaTarget } from '../db/schema.js'
import { iso } from '../time.js'
import { conversationRooms, type MembersRooms } from '../conversations/visibility.js'
import { recordBreaches, type SlaBreach } from './sync.js'
import { startSweeper, type Sweeper } from '../sweeper.js'

/**
 * Breaches (API.md section 18, docs/sla.md "Breaches"). A running target's due time is its own
 * indexed column (sla_targets.due_at, sla_targets_due_idx), so nothing is held in a process: every
 * API replica with JOBS_WORKER sweeps every SLA_SWEEP_INTERVAL_MS, and a breach is recorded at most
 * one interval (plus the sweep's own time) after the due time. Each conversation is handled in its
 * own transaction under its row lock taken with SKIP LOCKED (the lock every change of its targets
 * takes first), so the sweep never waits on a request nor deadlocks with one; the breach row's
 * primary key (conversation, policy, target, cycle) makes it once whatever the number of replicas.
 * sla:breached goes out after the commit.
 */

/** Due targets looked at per round; a round that fills it runs again at once. */
export const BREACH_BATCH = 200

/**
 * sla:breached to the members who may see the conversation (a private team's: its members, owners
 * and admins). `membersRooms` reads those rooms (a bulk request's reads them once per team).
 */
export async function publishBreaches(
  deps: Pick<Deps, 'sql' | 'events'>,
  breaches: SlaBreach[],
  membersRooms: MembersRooms = (c) => conversationRooms(deps.sql, c, true),
): Promise<void> {
  for (const b of breaches) {
    const to = await membersRooms({ workspaceId: b.workspaceId, guestId: b.guestId, teamId: b.teamId })
    deps.events.publish(to, 'sla:breached', { conversationId: b.conversationId, target: b.target, dueAt: iso(b.dueAt) })
  }
}

interface Due {
  conversationId: string
}

/** One sweep: records every breach due now. Returns how many this process recorded. */
export async function sweepBreaches(deps: Deps): Promise<number> {
  let recorded = 0
  for (;;) {
    // Candidates only (no lock): breachConversation locks and re-checks. now() (this statement's
    // start), not clock_timestamp(): a stable bound the index range can use, so an idle sweep
    // reads no row however many targets run (a volatile bound made it scan them all).
    const due = await deps.sql<Due[]>`
      SELECT DISTINCT conversation_id AS "conversationId" FROM (
        SELECT conversation_id FROM sla_targets
        WHERE due_at IS NOT NULL AND NOT breached AND due_at <= now()
        ORDER BY due_at LIMIT ${BREACH_BATCH}) d`
    let round = 0
    for (const d of due) {
      const breaches = await breachConversation(deps, d.conversationId)
      round += breaches.length
      await publishBreaches(deps, breaches)
    }
    recorded += round
    if (due.length < BREACH_BATCH || round === 0) return recorded
  }
}

/** Records the due breaches of one conversation under its row lock (SKIP LOCKED: a busy row waits for the next tick). */
async function breachConversation(deps: Deps, id: string): Promise<SlaBreach[]> {
  return deps.sql.begin(async (sql) => {
    const [c] = await sql<{ id: string; workspaceId: string; channelId: string; guestId: string; teamId: string | null; assignedAgentId: string | null }[]>`
      SELECT id, workspace_id AS "workspaceId", channel_id AS "channelId", guest_id AS "guestId", team_id AS "teamId",
        assigned_agent_id AS "assignedAgentId"
      FROM conversations WHERE id = ${id} AND deleted_at IS NULL
      FOR UPDATE SKIP LOCKED`
    if (!c) return []
    const targets = await sql<{ target: SlaTarget; cycle: number; policyId: string; dueAt: string }[]>`
      UPDATE sla_targets SET breached = true
      WHERE conversation_id = ${id} AND due_at IS NOT NULL AND NOT breached AND due_at <= clock_timestamp()
      RETURNING target, cycle, policy_id AS "policyId", due_at AS "dueAt"`
    const recorded = await recordBreaches(sql, targets.map((t) => ({ c, policyId: t.policyId, target: t.target, cycle: t.cycle, dueAt: t.dueAt })))
    return recorded.filter((b) => b !== null)
  })
}

/** Starts the periodic sweep in this process (src/sweeper.ts). */
export function startBreachSweeper(deps: Deps, intervalMs: number): Sweeper {
  return startSweeper(deps.log, 'sla breach sweep', intervalMs, () => sweepBreaches(deps))
}
