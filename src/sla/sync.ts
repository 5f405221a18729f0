import type { Sql } from '../db/client.js'
import type { ConversationPriority, ConversationStatus, MetricKind, SlaTarget } from '../db/schema.js'
import { recordSla } from '../analytics/record.js'
import { replay, type ClockPolicy, type HistoryEvent } from './clock.js'

/**
 * Keeping a conversation's SLA state (API.md section 18, docs/sla.md): the policy it matches, its
 * open targets (sla_targets, equal to what src/sla/clock.ts replays from its history) and
 * `sla_due_at`, their nearest running due time. Everything here runs inside the transaction that
 * changed the conversation, under its row lock: the targets, the met and breached analytics
 * events and a breach the change itself reveals commit together with their cause.
 */

/** A breach recorded by a transaction: sent as sla:breached once it commits. */
export interface SlaBreach {
  conversationId: string
  workspaceId: string
  guestId: string
  teamId: string | null
  target: SlaTarget
  dueAt: string
}

/** The conversation as the SLA rules need it (the locked row's columns). */
export interface SlaConversation {
  id: string
  workspaceId: string
  channelId: string
  guestId: string
  teamId: string | null
  assignedAgentId: string | null
}

type PolicyRow = ClockPolicy & { id: string }

/** The analytics kinds of each target: [met, breached]. */
const KINDS: Record<SlaTarget, [MetricKind, MetricKind]> = {
  FIRST_RESPONSE: ['sla_first_response_met', 'sla_first_response_breached'],
  NEXT_RESPONSE: ['sla_next_response_met', 'sla_next_response_breached'],
  RESOLUTION: ['sla_resolution_met', 'sla_resolution_breached'],
}

/**
 * The first policy of the workspace, by position then createdAt, whose appliesTo lists all match
 * (an empty list matches everything); null when none does.
 */
export async function matchPolicy(
  sql: Sql,
  c: { workspaceId: string; channelId: string; teamId: string | null; priority: ConversationPriority | null },
): Promise<string | null> {
  const [p] = await sql<{ id: string }[]>`
    SELECT id FROM sla_policies
    WHERE workspace_id = ${c.workspaceId}
      AND (cardinality(channel_ids) = 0 OR ${c.channelId}::uuid = ANY(channel_ids))
      AND (cardinality(team_ids) = 0 OR ${c.teamId}::uuid = ANY(team_ids))
      AND (cardinality(priorities) = 0 OR ${c.priority}::text = ANY(priorities))
    ORDER BY position, created_at, id
    LIMIT 1`
  return p?.id ?? null
}

/** A new conversation: its policy by matching, and its first targets. */
export async function slaOnCreate(sql: Sql, c: SlaConversation): Promise<void> {
  const policy = await matchPolicy(sql, { ...c, priority: null })
  if (!policy) return
  await sql`UPDATE conversations SET sla_policy_id = ${policy} WHERE id = ${c.id}`
  await syncSla(sql, c)
}

/** The locked row before a change, as slaAfterChange compares it. */
export interface SlaBefore extends SlaConversation {
  status: ConversationStatus
  priority: ConversationPriority | null
  slaPolicyId: string | null
  publicMessages: number
}

/**
 * After any change of a conversation (mutateConversation): log a status it entered, match its
 * policy again when its channel, team or priority changed (unless chosen by hand), and sync its
 * targets when something they depend on moved. Returns the breaches to send after commit.
 */
export async function slaAfterChange(sql: Sql, before: SlaBefore, deleted: boolean): Promise<SlaBreach[]> {
  if (deleted) {
    await sql`DELETE FROM sla_targets WHERE conversation_id = ${before.id}`
    await sql`UPDATE conversations SET sla_due_at = NULL WHERE id = ${before.id} AND sla_due_at IS NOT NULL`
    return []
  }
  const [cur] = await sql<
    {
      status: ConversationStatus
      channelId: string
      teamId: string | null
      priority: ConversationPriority | null
      slaPolicyId: string | null
      slaManual: boolean
      publicMessages: number
      assignedAgentId: string | null
      updatedAt: string
    }[]
  >`
    SELECT status, channel_id AS "channelId", team_id AS "teamId", priority, sla_policy_id AS "slaPolicyId", sla_manual AS "slaManual",
      public_messages AS "publicMessages", assigned_agent_id AS "assignedAgentId", updated_at AS "updatedAt"
    FROM conversations WHERE id = ${before.id}`
  if (cur.status !== before.status) {
    // At the change's own time: every status change sets updated_at in the same UPDATE.
    await sql`
      INSERT INTO conversation_status_log (conversation_id, workspace_id, at, status)
      VALUES (${before.id}, ${before.workspaceId}, ${cur.updatedAt}::timestamptz, ${cur.status}) ON CONFLICT DO NOTHING`
  }
  let policy = cur.slaPolicyId
  const inputsMoved = cur.channelId !== before.channelId || cur.teamId !== before.teamId || cur.priority !== before.priority
  if (!cur.slaManual && inputsMoved) {
    policy = await matchPolicy(sql, { workspaceId: before.workspaceId, ...cur })
    if (policy !== cur.slaPolicyId) await sql`UPDATE conversations SET sla_policy_id = ${policy} WHERE id = ${before.id}`
  }
  const moved = policy !== before.slaPolicyId || cur.status !== before.status || cur.publicMessages !== before.publicMessages
  // Without a policy before or after there is nothing to keep (no targets, no due date).
  if (!moved || (policy === null && before.slaPolicyId === null)) return []
  return syncSla(sql, { ...before, teamId: cur.teamId, channelId: cur.channelId, assignedAgentId: cur.assignedAgentId })
}

/** The conversation's history since creation, in order, as the clock reads it. */
async function historyOf(sql: Sql, id: string): Promise<{ createdAt: number; events: HistoryEvent[]; status: ConversationStatus }> {
  const [c] = await sql<{ createdAt: number; status: ConversationStatus }[]>`
    SELECT extract(epoch FROM created_at)::float8 * 1000 AS "createdAt", status FROM conversations WHERE id = ${id}`
  // Public guest and agent messages (notes and system messages never count), and the statuses it
  // entered; a message sorts before a status change of the same instant (a guest message that
  // reopens is stored before the status it causes).
  const rows = await sql<{ kind: 'status' | 'message'; at: number; value: string; seq: number }[]>`
    SELECT * FROM (
      SELECT 'message' AS kind, extract(epoch FROM created_at)::float8 * 1000 AS at, sender_type AS value,
             row_number() OVER (ORDER BY created_at, id)::int AS seq, created_at AS ts, 0 AS o
      FROM messages WHERE conversation_id = ${id} AND NOT private AND sender_type IN ('GUEST', 'AGENT')
      UNION ALL
      SELECT 'status', extract(epoch FROM at)::float8 * 1000, status, 0, at, 1
      FROM conversation_status_log WHERE conversation_id = ${id}
    ) h ORDER BY ts, o`
  const events: HistoryEvent[] = rows.map((r) =>
    r.kind === 'status'
      ? { kind: 'status', at: r.at, status: r.value as ConversationStatus }
      : { kind: 'message', at: r.at, sender: r.value as 'GUEST' | 'AGENT', seq: r.seq },
  )
  return { createdAt: c.createdAt, events, status: c.status }
}

const toPg = (ms: number) => new Date(ms).toISOString()

/**
 * Makes the conversation's sla_targets rows what its policy and history say, under the row lock:
 * targets that ended with this change count as met (their event came by the due time) or breached
 * (after it, or overdue and not yet swept), each once; the running ones are rewritten with their
 * due times; `sla_due_at` follows. Breaches already recorded stay (the rows and the `breached` flag).
 */
export async function syncSla(sql: Sql, c: SlaConversation): Promise<SlaBreach[]> {
  const [row] = await sql<{ policyId: string | null }[]>`SELECT sla_policy_id AS "policyId" FROM conversations WHERE id = ${c.id}`
  const existing = await sql<{ target: SlaTarget; cycle: number; policyId: string; breached: boolean }[]>`
    SELECT target, cycle, policy_id AS "policyId", breached FROM sla_targets WHERE conversation_id = ${c.id}
    ORDER BY target, cycle FOR UPDATE`
  if (!row.policyId) {
    if (existing.length > 0) await sql`DELETE FROM sla_targets WHERE conversation_id = ${c.id}`
    await sql`UPDATE conversations SET sla_due_at = NULL WHERE id = ${c.id} AND sla_due_at IS NOT NULL`
    return []
  }
  const [policy] = await sql<PolicyRow[]>`
    SELECT id, first_response_minutes AS "firstResponseMinutes", next_response_minutes AS "nextResponseMinutes",
      resolution_minutes AS "resolutionMinutes", business_hours AS "businessHours"
    FROM sla_policies WHERE id = ${row.policyId}`
  const history = await historyOf(sql, c.id)
  // A conversation older than the status log may be in a status its log never entered.
  const last = [...history.events].reverse().find((e) => e.kind === 'status')
  const logged = last?.kind === 'status' ? last.status : 'OPEN'
  if (logged !== history.status) history.events.push({ kind: 'status', at: Date.now(), status: history.status })
  const targets = replay(policy, history.createdAt, history.events)

  const key = (t: { target: SlaTarget; cycle: number }) => `${t.target}:${t.cycle}`
  const before = new Map(existing.filter((e) => e.policyId === policy.id).map((e) => [key(e), e]))
  const now = Date.now()
  const breaches: SlaBreach[] = []
  const running = targets.filter((t) => t.outcome === 'running')

  for (const t of targets) {
    const was = before.get(key(t))
    // Only targets this change ended, or running ones overdue, are judged here; the rest of the
    // history was judged when it happened (or under another policy).
    const ended = was && t.outcome !== 'running' && t.outcome !== 'stopped'
    const overdue = t.outcome === 'running' && t.dueAt !== null && t.dueAt <= now && !was?.breached
    if (!ended && !overdue) continue
    if (t.outcome === 'met') {
      if (was?.breached) continue
      await recordSla(sql, c, KINDS[t.target][0], t.cycle, toPg(t.endedAt!))
      continue
    }
    const b = await recordBreach(sql, c, policy.id, t.target, t.cycle, toPg(t.dueAt!))
    if (b) breaches.push(b)
  }

  await sql`DELETE FROM sla_targets WHERE conversation_id = ${c.id}`
  if (running.length > 0) {
    await sql`
      INSERT INTO sla_targets (conversation_id, workspace_id, target, cycle, policy_id, started_at, due_at, breached)
      SELECT ${c.id}::uuid, ${c.workspaceId}::uuid, r.target, r.cycle, ${policy.id}::uuid, r.started_at, r.due_at, r.breached
      FROM unnest(${running.map((t) => t.target)}::text[], ${running.map((t) => t.cycle)}::int[],
                  ${running.map((t) => toPg(t.startedAt))}::text[]::timestamptz[],
                  ${running.map((t) => (t.dueAt === null ? null : toPg(t.dueAt)))}::text[]::timestamptz[],
                  ${running.map((t) => (before.get(key(t))?.breached || (t.dueAt !== null && t.dueAt <= now) ? 't' : 'f'))}::text[]::boolean[])
        AS r(target, cycle, started_at, due_at, breached)`
  }
  const nearest = running.reduce<number | null>((m, t) => (t.dueAt !== null && (m === null || t.dueAt < m) ? t.dueAt : m), null)
  await sql`UPDATE conversations SET sla_due_at = ${nearest === null ? null : toPg(nearest)}::timestamptz WHERE id = ${c.id}`
  return breaches
}

/**
 * Records one breach (target and cycle, under this policy), once: the unique key makes a second
 * recording, by another replica or a retry, a no-op. The analytics event goes in the same
 * statement's transaction. Returns the breach to send, or null when it was already recorded.
 */
export async function recordBreach(
  sql: Sql,
  c: SlaConversation,
  policyId: string,
  target: SlaTarget,
  cycle: number,
  dueAt: string,
): Promise<SlaBreach | null> {
  const [row] = await sql<{ dueAt: string }[]>`
    INSERT INTO sla_breaches (conversation_id, workspace_id, target, cycle, policy_id, due_at, breached_at)
    VALUES (${c.id}, ${c.workspaceId}, ${target}, ${cycle}, ${policyId}, ${dueAt}::timestamptz, clock_timestamp())
    ON CONFLICT DO NOTHING
    RETURNING due_at AS "dueAt"`
  if (!row) return null
  await recordSla(sql, c, KINDS[target][1], cycle, dueAt)
  return { conversationId: c.id, workspaceId: c.workspaceId, guestId: c.guestId, teamId: c.teamId, target, dueAt: row.dueAt }
}

