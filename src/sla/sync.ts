import type { Sql } from '../db/client.js'
import type { ConversationPriority, ConversationStatus, MetricKind, SlaTarget } from '../db/schema.js'
import { recordSla, type SlaEvent } from '../analytics/record.js'
import { replay, type ClockPolicy, type HistoryEvent } from './clock.js'

/**
 * Keeping a conversation's SLA state (API.md section 18, docs/sla.md): the policy it matches, its
 * open targets (sla_targets, equal to what src/sla/clock.ts replays from its history) and
 * `sla_due_at`, their nearest running due time. Everything here runs inside the transaction that
 * changed the conversation, under its row lock: the targets, the met and breached analytics
 * events and a breach the change itself reveals commit together with their cause.
 *
 * Each step takes a list of conversations and runs a fixed number of set-based statements
 * whatever its length: a single change passes one, a bulk request (src/conversations/batch.ts)
 * the changes of its whole batch at once, just before its commit, so its SLA work is about ten
 * statements per request rather than about eleven per conversation (docs/sla.md, "The clock"). The
 * conversations of one call are distinct, and each is locked by the caller.
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

type MatchInput = { workspaceId: string; channelId: string; teamId: string | null; priority: ConversationPriority | null }

/**
 * The first policy of the workspace, by position then createdAt, whose appliesTo lists all match
 * (an empty list matches everything); null when none does.
 */
export async function matchPolicy(sql: Sql, c: MatchInput): Promise<string | null> {
  return (await matchPolicies(sql, [c]))[0]
}

/** matchPolicy for each conversation, in one statement; in the order given. */
async function matchPolicies(sql: Sql, cs: MatchInput[]): Promise<(string | null)[]> {
  if (cs.length === 0) return []
  const rows = await sql<{ policy: string | null }[]>`
    SELECT (SELECT p.id FROM sla_policies p
            WHERE p.workspace_id = x.workspace_id
              AND (cardinality(p.channel_ids) = 0 OR x.channel_id = ANY(p.channel_ids))
              AND (cardinality(p.team_ids) = 0 OR x.team_id = ANY(p.team_ids))
              AND (cardinality(p.priorities) = 0 OR x.priority = ANY(p.priorities))
            ORDER BY p.position, p.created_at, p.id
            LIMIT 1) AS policy
    FROM unnest(${cs.map((c) => c.workspaceId)}::uuid[], ${cs.map((c) => c.channelId)}::uuid[], ${cs.map((c) => c.teamId)}::uuid[],
                ${cs.map((c) => c.priority)}::text[]) WITH ORDINALITY AS x(workspace_id, channel_id, team_id, priority, n)
    ORDER BY x.n`
  return rows.map((r) => r.policy)
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

/** A change of a conversation as slaAfterChanges judges it: its locked row before, and whether it deleted it. */
export interface SlaChange {
  before: SlaBefore
  deleted: boolean
}

/**
 * After any change of a conversation (mutateConversation): log a status it entered, match its
 * policy again when its channel, team or priority changed (unless chosen by hand), and sync its
 * targets when something they depend on moved. Returns the breaches to send after commit.
 */
export async function slaAfterChange(sql: Sql, before: SlaBefore, deleted: boolean): Promise<SlaBreach[]> {
  return (await slaAfterChanges(sql, [{ before, deleted }]))[0]
}

/**
 * slaAfterChange for many changed conversations (distinct, each changed once since its `before`
 * was read: a bulk request's batch), in a fixed number of statements. Returns each change's
 * breaches, in the order given.
 */
export async function slaAfterChanges(sql: Sql, changes: SlaChange[]): Promise<SlaBreach[][]> {
  const out = changes.map((): SlaBreach[] => [])
  const gone = changes.filter((c) => c.deleted).map((c) => c.before.id)
  if (gone.length > 0) {
    await sql`DELETE FROM sla_targets WHERE conversation_id = ANY(${gone}::uuid[])`
    await sql`UPDATE conversations SET sla_due_at = NULL WHERE id = ANY(${gone}::uuid[]) AND sla_due_at IS NOT NULL`
  }
  const live = changes.filter((c) => !c.deleted)
  if (live.length === 0) return out
  const rows = await sql<
    {
      id: string
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
    SELECT id, status, channel_id AS "channelId", team_id AS "teamId", priority, sla_policy_id AS "slaPolicyId", sla_manual AS "slaManual",
      public_messages AS "publicMessages", assigned_agent_id AS "assignedAgentId", updated_at AS "updatedAt"
    FROM conversations WHERE id = ANY(${live.map((c) => c.before.id)}::uuid[])`
  const curOf = new Map(rows.map((r) => [r.id, r]))
  const judged = live.map(({ before }) => ({ before, cur: curOf.get(before.id)! }))
  // At the change's own time: every status change sets updated_at in the same UPDATE.
  const entered = judged.filter(({ before, cur }) => cur.status !== before.status)
  if (entered.length > 0) {
    await sql`
      INSERT INTO conversation_status_log (conversation_id, workspace_id, at, status)
      SELECT * FROM unnest(${entered.map((j) => j.before.id)}::uuid[], ${entered.map((j) => j.before.workspaceId)}::uuid[],
                           ${entered.map((j) => j.cur.updatedAt)}::text[]::timestamptz[], ${entered.map((j) => j.cur.status)}::text[])
      ON CONFLICT DO NOTHING`
  }
  const policyOf = new Map(judged.map((j) => [j.before.id, j.cur.slaPolicyId]))
  const rematch = judged.filter(
    ({ before, cur }) => !cur.slaManual && (cur.channelId !== before.channelId || cur.teamId !== before.teamId || cur.priority !== before.priority),
  )
  const matched = await matchPolicies(sql, rematch.map(({ before, cur }) => ({ ...cur, workspaceId: before.workspaceId })))
  rematch.forEach((j, i) => policyOf.set(j.before.id, matched[i]))
  const repoint = rematch.filter((j, i) => matched[i] !== j.cur.slaPolicyId)
  if (repoint.length > 0) {
    await sql`
      UPDATE conversations c SET sla_policy_id = x.policy
      FROM unnest(${repoint.map((j) => j.before.id)}::uuid[], ${repoint.map((j) => policyOf.get(j.before.id) ?? null)}::uuid[]) AS x(id, policy)
      WHERE c.id = x.id`
  }
  const sync: { at: number; c: SlaConversation }[] = []
  judged.forEach(({ before, cur }, i) => {
    const policy = policyOf.get(before.id) ?? null
    const moved = policy !== before.slaPolicyId || cur.status !== before.status || cur.publicMessages !== before.publicMessages
    // Without a policy before or after there is nothing to keep (no targets, no due date).
    if (!moved || (policy === null && before.slaPolicyId === null)) return
    sync.push({ at: i, c: { ...before, teamId: cur.teamId, channelId: cur.channelId, assignedAgentId: cur.assignedAgentId } })
  })
  const breaches = await syncSlaAll(sql, sync.map((s) => s.c))
  const liveAt = changes.flatMap((c, i) => (c.deleted ? [] : [i]))
  sync.forEach((s, k) => (out[liveAt[s.at]] = breaches[k]))
  return out
}

/** The conversations' histories since creation, in order, as the clock reads them. */
async function historiesOf(
  sql: Sql,
  ids: string[],
): Promise<Map<string, { createdAt: number; events: HistoryEvent[]; status: ConversationStatus; policyId: string | null }>> {
  const cs = await sql<{ id: string; createdAt: number; status: ConversationStatus; policyId: string | null }[]>`
    SELECT id, extract(epoch FROM created_at)::float8 * 1000 AS "createdAt", status, sla_policy_id AS "policyId"
    FROM conversations WHERE id = ANY(${ids}::uuid[])`
  const out = new Map(cs.map((c) => [c.id, { createdAt: c.createdAt, events: [] as HistoryEvent[], status: c.status, policyId: c.policyId }]))
  // Public guest and agent messages (notes and system messages never count), and the statuses it
  // entered; a message sorts before a status change of the same instant (a guest message that
  // reopens is stored before the status it causes).
  const rows = await sql<{ id: string; kind: 'status' | 'message'; at: number; value: string; seq: number }[]>`
    SELECT id, kind, at, value, seq FROM (
      SELECT conversation_id AS id, 'message' AS kind, extract(epoch FROM created_at)::float8 * 1000 AS at, sender_type AS value,
             row_number() OVER (PARTITION BY conversation_id ORDER BY created_at, id)::int AS seq, created_at AS ts, 0 AS o
      FROM messages WHERE conversation_id = ANY(${ids}::uuid[]) AND NOT private AND sender_type IN ('GUEST', 'AGENT')
      UNION ALL
      SELECT conversation_id, 'status', extract(epoch FROM at)::float8 * 1000, status, 0, at, 1
      FROM conversation_status_log WHERE conversation_id = ANY(${ids}::uuid[])
    ) h ORDER BY id, ts, o, seq`
  for (const r of rows) {
    out
      .get(r.id)!
      .events.push(
        r.kind === 'status'
          ? { kind: 'status', at: r.at, status: r.value as ConversationStatus }
          : { kind: 'message', at: r.at, sender: r.value as 'GUEST' | 'AGENT', seq: r.seq },
      )
  }
  return out
}

const toPg = (ms: number) => new Date(ms).toISOString()

/**
 * Makes the conversation's sla_targets rows what its policy and history say, under the row lock:
 * targets that ended with this change count as met (their event came by the due time) or breached
 * (after it, or overdue and not yet swept), each once; the running ones are rewritten with their
 * due times; `sla_due_at` follows. Breaches already recorded stay (the rows and the `breached` flag).
 */
export async function syncSla(sql: Sql, c: SlaConversation): Promise<SlaBreach[]> {
  return (await syncSlaAll(sql, [c]))[0]
}

/** syncSla for many conversations (distinct, locked), in a fixed number of statements; breaches in the order given. */
async function syncSlaAll(sql: Sql, cs: SlaConversation[]): Promise<SlaBreach[][]> {
  if (cs.length === 0) return []
  const ids = cs.map((c) => c.id)
  const histories = await historiesOf(sql, ids)
  const existing = await sql<{ id: string; target: SlaTarget; cycle: number; policyId: string; breached: boolean }[]>`
    SELECT conversation_id AS id, target, cycle, policy_id AS "policyId", breached FROM sla_targets WHERE conversation_id = ANY(${ids}::uuid[])
    ORDER BY conversation_id, target, cycle FOR UPDATE`
  const policyIds = [...new Set(cs.map((c) => histories.get(c.id)!.policyId).filter((p) => p !== null))]
  const policies =
    policyIds.length === 0
      ? []
      : await sql<PolicyRow[]>`
          SELECT id, first_response_minutes AS "firstResponseMinutes", next_response_minutes AS "nextResponseMinutes",
            resolution_minutes AS "resolutionMinutes", business_hours AS "businessHours"
          FROM sla_policies WHERE id = ANY(${policyIds}::uuid[])`
  const policyById = new Map(policies.map((p) => [p.id, p]))

  const key = (t: { target: SlaTarget; cycle: number }) => `${t.target}:${t.cycle}`
  const now = Date.now()
  const out = cs.map((): SlaBreach[] => [])
  const met: SlaEvent[] = []
  const breached: { at: number; c: SlaConversation; policyId: string; target: SlaTarget; cycle: number; dueAt: string }[] = []
  const targetRows: { c: SlaConversation; policyId: string; target: SlaTarget; cycle: number; startedAt: string; dueAt: string | null; breached: boolean }[] = []
  const dueAt: (string | null)[] = []

  cs.forEach((c, i) => {
    const history = histories.get(c.id)!
    // A policy deleted meanwhile (its delete sets the column to null under the row lock) counts as none.
    const policy = history.policyId === null ? undefined : policyById.get(history.policyId)
    if (!policy) {
      dueAt.push(null)
      return
    }
    // A conversation older than the status log may be in a status its log never entered.
    const last = [...history.events].reverse().find((e) => e.kind === 'status')
    const logged = last?.kind === 'status' ? last.status : 'OPEN'
    if (logged !== history.status) history.events.push({ kind: 'status', at: Date.now(), status: history.status })
    const targets = replay(policy, history.createdAt, history.events)
    const before = new Map(existing.filter((e) => e.id === c.id && e.policyId === policy.id).map((e) => [key(e), e]))
    const running = targets.filter((t) => t.outcome === 'running')
    for (const t of targets) {
      const was = before.get(key(t))
      // Only targets this change ended, or running ones overdue, are judged here; the rest of the
      // history was judged when it happened (or under another policy).
      const ended = was && t.outcome !== 'running' && t.outcome !== 'stopped'
      const overdue = t.outcome === 'running' && t.dueAt !== null && t.dueAt <= now && !was?.breached
      if (!ended && !overdue) continue
      if (t.outcome === 'met') {
        if (!was?.breached) met.push({ c, kind: KINDS[t.target][0], cycle: t.cycle, at: toPg(t.endedAt!) })
        continue
      }
      breached.push({ at: i, c, policyId: policy.id, target: t.target, cycle: t.cycle, dueAt: toPg(t.dueAt!) })
    }
    for (const t of running) {
      const overdue = before.get(key(t))?.breached || (t.dueAt !== null && t.dueAt <= now)
      targetRows.push({ c, policyId: policy.id, target: t.target, cycle: t.cycle, startedAt: toPg(t.startedAt), dueAt: t.dueAt === null ? null : toPg(t.dueAt), breached: Boolean(overdue) })
    }
    const nearest = running.reduce<number | null>((m, t) => (t.dueAt !== null && (m === null || t.dueAt < m) ? t.dueAt : m), null)
    dueAt.push(nearest === null ? null : toPg(nearest))
  })

  await recordSla(sql, met)
  const recorded = await recordBreaches(sql, breached)
  breached.forEach((b, k) => {
    if (recorded[k]) out[b.at].push(recorded[k])
  })
  await sql`DELETE FROM sla_targets WHERE conversation_id = ANY(${ids}::uuid[])`
  if (targetRows.length > 0) {
    await sql`
      INSERT INTO sla_targets (conversation_id, workspace_id, target, cycle, policy_id, started_at, due_at, breached)
      SELECT * FROM unnest(${targetRows.map((r) => r.c.id)}::uuid[], ${targetRows.map((r) => r.c.workspaceId)}::uuid[],
                           ${targetRows.map((r) => r.target)}::text[], ${targetRows.map((r) => r.cycle)}::int[], ${targetRows.map((r) => r.policyId)}::uuid[],
                           ${targetRows.map((r) => r.startedAt)}::text[]::timestamptz[], ${targetRows.map((r) => r.dueAt)}::text[]::timestamptz[],
                           ${targetRows.map((r) => (r.breached ? 't' : 'f'))}::text[]::boolean[])`
  }
  // Only rows whose due date moves: a conversation without a policy mostly has none already.
  await sql`
    UPDATE conversations c SET sla_due_at = x.due_at
    FROM unnest(${ids}::uuid[], ${dueAt}::text[]::timestamptz[]) AS x(id, due_at)
    WHERE c.id = x.id AND c.sla_due_at IS DISTINCT FROM x.due_at`
  return out
}

/**
 * Records breaches (each a target and cycle, under a policy; distinct), once: the unique key makes
 * a second recording, by another replica or a retry, a no-op. Their analytics events go in the
 * same transaction. Two statements however many; returns each breach to send, or null when it was
 * already recorded, in the order given.
 */
export async function recordBreaches(
  sql: Sql,
  bs: { c: SlaConversation; policyId: string; target: SlaTarget; cycle: number; dueAt: string }[],
): Promise<(SlaBreach | null)[]> {
  if (bs.length === 0) return []
  const rows = await sql<{ id: string; target: SlaTarget; cycle: number; policyId: string; dueAt: string }[]>`
    INSERT INTO sla_breaches (conversation_id, workspace_id, target, cycle, policy_id, due_at, breached_at)
    SELECT x.*, clock_timestamp()
    FROM unnest(${bs.map((b) => b.c.id)}::uuid[], ${bs.map((b) => b.c.workspaceId)}::uuid[], ${bs.map((b) => b.target)}::text[],
                ${bs.map((b) => b.cycle)}::int[], ${bs.map((b) => b.policyId)}::uuid[], ${bs.map((b) => b.dueAt)}::text[]::timestamptz[]) AS x
    ON CONFLICT DO NOTHING
    RETURNING conversation_id AS id, target, cycle, policy_id AS "policyId", due_at AS "dueAt"`
  const key = (b: { id: string; target: SlaTarget; cycle: number; policyId: string }) => `${b.id}:${b.target}:${b.cycle}:${b.policyId}`
  const inserted = new Map(rows.map((r) => [key(r), r.dueAt]))
  const out = bs.map((b): SlaBreach | null => {
    const dueAt = inserted.get(key({ ...b, id: b.c.id }))
    return dueAt === undefined ? null : { conversationId: b.c.id, workspaceId: b.c.workspaceId, guestId: b.c.guestId, teamId: b.c.teamId, target: b.target, dueAt }
  })
  await recordSla(
    sql,
    out.flatMap((b, i) => (b ? [{ c: bs[i].c, kind: KINDS[b.target][1], cycle: bs[i].cycle, at: bs[i].dueAt }] : [])),
  )
  return out
}
