import { randomInt } from 'node:crypto'
import type { Fragment, Sql } from '../db/client.js'
import type { conversations, MetricKind } from '../db/schema.js'

/**
 * Recording the analytics events (docs/analytics.md). Every function runs inside the transaction
 * of the change that causes the event, under the conversation's row lock, so an event exists
 * exactly when its cause committed: a rolled back request records nothing, a retried one finds
 * the state already changed (and the event key taken), a concurrent close waits for the lock and
 * then sees a resolved conversation. Each event is added to the rollups in the same statement.
 */

/** The conversation as the recording needs it: the locked row (src/conversations/lifecycle.ts). */
export type MetricConversation = Pick<
  typeof conversations.$inferSelect,
  'id' | 'workspaceId' | 'channelId' | 'assignedAgentId' | 'cycle' | 'awaitingReply' | 'publicMessages'
> & {
  /** Creation or the last reopen: COALESCE(cycle_started_at, created_at), never null. */
  cycleStartedAt: string
}

interface EventInput {
  kind: MetricKind
  seq: number
  agentId: string | null
  at: string
  /** A duration: the value is `at - since` in seconds, computed by PostgreSQL (microseconds kept). */
  since?: string
  value?: number
}

/** Rollup rows of one fact are spread over this many slot rows (src/db/schema.ts, metric_rollups). */
const SLOTS = 4
const ZERO_UUID = '00000000-0000-0000-0000-000000000000'

/**
 * Adds the events' effect on metric_rollups: every kept grain and dim (metric_kept(): UTC hour,
 * day, third of a month, month; workspace, channel, agent, agent and channel, and the same four
 * per team for an event that has one), `sign` +1 for new events, -1 for removed ones. A duration
 * in a dim with the agent bit adds to the `hist` of one row rather than to a row per bucket.
 * `source` is the CTE body that yields the events (an INSERT ... RETURNING or a DELETE ...
 * RETURNING), so the rollups move by exactly the rows that statement changed. The rows are upserted
 * in key order, so two transactions adding to the same rollup rows lock them in the same order.
 *
 * Through a `sql` given to deferRollups, the statement runs `source` alone and keeps the events
 * for flushRollups instead (a bulk request's one transaction, below).
 */
async function rollupFrom(sql: Sql, source: Fragment, sign: 1 | -1): Promise<void> {
  const deferred = deferredOn.get(sql)
  if (deferred) {
    const rows = await sql<RolledEvent[]>`
      WITH ev AS (${source})
      SELECT workspace_id AS "workspaceId", channel_id AS "channelId", agent_id AS "agentId", team_id AS "teamId", kind, value, occurred_at AS "occurredAt" FROM ev`
    for (const r of rows) deferred.push({ ...r, sign })
    return
  }
  // Per bucket first, then a duration of an agent dim folded into one row with its buckets in
  // `hist` (metric_hist_row()): one statement's events that share that row (a bulk close) must
  // reach it as one delta, since ON CONFLICT cannot update a row twice. Built as jsonb, stored as
  // json text (migration issue31_hist_json: reads pass the text through).
  await sql`
    WITH ev AS (${source}), b AS (
      SELECT ev.workspace_id, d.dim, g.grain, metric_period(g.grain, ev.occurred_at) AS period_start, d.channel_id, d.agent_id, d.team_id, ev.kind,
             CASE WHEN metric_has_histogram(ev.kind) THEN metric_bucket(ev.value) ELSE -1 END AS bucket,
             ${sign} * count(*) AS n, ${sign} * COALESCE(sum(ev.value), 0) AS total
      FROM ev
      CROSS JOIN (VALUES ('h'), ('d'), ('t'), ('m')) g(grain)
      CROSS JOIN LATERAL (VALUES (0::smallint, ${ZERO_UUID}::uuid, ''::text, ${ZERO_UUID}::uuid), (1::smallint, ev.channel_id, ''::text, ${ZERO_UUID}::uuid),
                                 (2::smallint, ${ZERO_UUID}::uuid, ev.agent_id, ${ZERO_UUID}::uuid), (3::smallint, ev.channel_id, ev.agent_id, ${ZERO_UUID}::uuid),
                                 (4::smallint, ${ZERO_UUID}::uuid, ''::text, ev.team_id), (5::smallint, ev.channel_id, ''::text, ev.team_id),
                                 (6::smallint, ${ZERO_UUID}::uuid, ev.agent_id, ev.team_id), (7::smallint, ev.channel_id, ev.agent_id, ev.team_id)
                         ) d(dim, channel_id, agent_id, team_id)
      WHERE d.agent_id IS NOT NULL AND d.team_id IS NOT NULL AND metric_kept(g.grain, d.dim)
      GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    )
    INSERT INTO metric_rollups AS r (workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket, slot, n, total, hist)
    SELECT workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind,
           CASE WHEN metric_hist_row(dim, kind) THEN -1 ELSE bucket END, ${randomInt(SLOTS)}, sum(n), sum(total),
           (jsonb_object_agg(bucket, n) FILTER (WHERE metric_hist_row(dim, kind)))::json
    FROM b
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    ON CONFLICT (workspace_id, dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket, slot)
    DO UPDATE SET n = r.n + excluded.n, total = r.total + excluded.total, hist = metric_hist_add(r.hist, excluded.hist)`
}

/** An event recorded while its rollups were deferred, with its sign (+1 added, -1 removed). */
export interface RolledEvent {
  workspaceId: string
  channelId: string
  agentId: string | null
  teamId: string | null
  kind: MetricKind
  value: number | null
  occurredAt: string
  sign?: 1 | -1
}

/** The transactions whose rollup additions are kept for a later flush. */
const deferredOn = new WeakMap<Sql, RolledEvent[]>()

/**
 * From now on, the rollup additions of events recorded through `sql` (a transaction) go to
 * `into` instead of metric_rollups; the events themselves are written as
 * always. Why: a bulk request runs many conversations' changes in one transaction
 * (src/conversations/batch.ts); upserting the rollup rows change by change would hold them, in
 * a random order, until its commit, so two bulks of a workspace would queue or deadlock on them.
 * flushRollups adds them all in one ordered statement just before the commit instead.
 */
export function deferRollups(sql: Sql, into: RolledEvent[]): void {
  deferredOn.set(sql, into)
}

/** Ends the deferral on `sql` and adds the deferred events to the rollups: one statement per sign, rows in key order. */
export async function flushRollups(sql: Sql, events: RolledEvent[]): Promise<void> {
  deferredOn.delete(sql)
  for (const sign of [1, -1] as const) {
    const ev = events.filter((e) => (e.sign ?? 1) === sign)
    if (ev.length === 0) continue
    await rollupFrom(
      sql,
      sql`SELECT * FROM unnest(${ev.map((e) => e.workspaceId)}::uuid[], ${ev.map((e) => e.channelId)}::uuid[], ${ev.map((e) => e.agentId)}::text[], ${ev.map((e) => e.teamId)}::uuid[],
                               ${ev.map((e) => e.kind)}::text[], ${ev.map((e) => e.value)}::float8[], ${ev.map((e) => e.occurredAt)}::text[]::timestamptz[])
          AS ev(workspace_id, channel_id, agent_id, team_id, kind, value, occurred_at)`,
      sign,
    )
  }
}

/**
 * Inserts the events (a taken key is a retry: nothing happens) and adds them to the rollups. The
 * team is the conversation's as this transaction sees it, under its row lock: the team at the
 * moment of the event (API.md section 16), whatever it becomes later.
 */
async function record(sql: Sql, c: Pick<MetricConversation, 'id' | 'workspaceId' | 'channelId'>, events: EventInput[]): Promise<void> {
  await recordAll(sql, events.map((e) => ({ ...e, c })))
}

/** Events of one or more conversations (a bulk request's SLA outcomes, src/sla/sync.ts), in one statement. */
async function recordAll(sql: Sql, events: (EventInput & { c: Pick<MetricConversation, 'id' | 'workspaceId' | 'channelId'> })[]): Promise<void> {
  if (events.length === 0) return
  const insert = sql`
    INSERT INTO metric_events (workspace_id, conversation_id, kind, seq, channel_id, agent_id, team_id, value, occurred_at)
    SELECT e.workspace_id, e.conversation_id, e.kind, e.seq, e.channel_id, e.agent_id,
           (SELECT team_id FROM conversations WHERE id = e.conversation_id),
           COALESCE(extract(epoch FROM e.at - e.since)::float8, e.value), e.at
    FROM unnest(${events.map((e) => e.c.workspaceId)}::uuid[], ${events.map((e) => e.c.id)}::uuid[], ${events.map((e) => e.c.channelId)}::uuid[],
                ${events.map((e) => e.kind)}::text[], ${events.map((e) => e.seq)}::int[], ${events.map((e) => e.agentId)}::text[],
                ${events.map((e) => e.at)}::text[]::timestamptz[], ${events.map((e) => e.since ?? null)}::text[]::timestamptz[],
                ${events.map((e) => e.value ?? null)}::float8[])
         AS e(workspace_id, conversation_id, channel_id, kind, seq, agent_id, at, since, value)
    ON CONFLICT DO NOTHING
    RETURNING workspace_id, channel_id, agent_id, team_id, kind, value, occurred_at`
  await rollupFrom(sql, insert, 1)
}

/** Removes events of the conversation (all, or those of `kinds`) and takes them out of the rollups. */
async function remove(sql: Sql, conversationId: string, kinds: MetricKind[] | null): Promise<void> {
  const del = sql`
    DELETE FROM metric_events WHERE conversation_id = ${conversationId}
      ${kinds ? sql`AND kind = ANY(${kinds}::text[])` : sql``}
    RETURNING workspace_id, channel_id, agent_id, team_id, kind, value, occurred_at`
  await rollupFrom(sql, del, -1)
}

/** A new conversation (nobody is assigned yet, so the creation is attributed to nobody). */
export async function recordCreated(sql: Sql, c: Pick<MetricConversation, 'id' | 'workspaceId' | 'channelId'>, at: string): Promise<void> {
  await record(sql, c, [{ kind: 'conversation_created', seq: 0, agentId: null, at }])
}

/**
 * A reopen (PATCH reopen, or a guest message on a resolved conversation): a new open period
 * starts, waiting for its own first response. Returns the conversation as it now is.
 */
export async function recordReopened(sql: Sql, c: MetricConversation, at: string): Promise<MetricConversation> {
  const cycle = c.cycle + 1
  await sql`UPDATE conversations SET cycle = ${cycle}, cycle_started_at = ${at}::timestamptz, awaiting_reply = true WHERE id = ${c.id}`
  await record(sql, c, [{ kind: 'conversation_reopened', seq: cycle, agentId: c.assignedAgentId, at }])
  return { ...c, cycle, cycleStartedAt: at, awaitingReply: true }
}

/** A close of an open conversation: one resolution sample, close minus the start of this open period. */
export async function recordResolved(sql: Sql, c: MetricConversation, at: string): Promise<void> {
  await record(sql, c, [{ kind: 'conversation_resolved', seq: c.cycle, agentId: c.assignedAgentId, at, since: c.cycleStartedAt }])
}

export interface MetricMessage {
  senderType: 'GUEST' | 'AGENT' | 'SYSTEM'
  /** The member's userId for an agent message. */
  senderId: string | null
  at: string
  /** An agents' internal note (section 12): never counted. */
  private: boolean
}

/**
 * A message just stored. Private notes and system messages never count. A public guest message
 * is a message received (attributed to the assignee); a public agent message a message sent by
 * its author and, when none was sent since the conversation was opened or reopened, the first
 * response of this open period.
 */
export async function recordMessage(sql: Sql, c: MetricConversation, m: MetricMessage): Promise<void> {
  if (m.private || m.senderType === 'SYSTEM') return
  const seq = c.publicMessages + 1
  const agent = m.senderType === 'AGENT'
  const firstResponse = agent && c.awaitingReply
  await sql`
    UPDATE conversations SET public_messages = ${seq}, last_public_sender = ${m.senderType},
      awaiting_reply = ${agent ? false : c.awaitingReply}
    WHERE id = ${c.id}`
  const events: EventInput[] = [
    agent
      ? { kind: 'message_sent', seq, agentId: m.senderId, at: m.at }
      : { kind: 'message_received', seq, agentId: c.assignedAgentId, at: m.at },
  ]
  if (firstResponse) events.push({ kind: 'first_response', seq: c.cycle, agentId: m.senderId, at: m.at, since: c.cycleStartedAt })
  await record(sql, c, events)
}

/**
 * A satisfaction rating given or replaced (section 14): the conversation's one rating sample
 * moves to the new rating and its time. Call it in the transaction that writes the rating.
 */
export async function recordCsat(sql: Sql, c: Pick<MetricConversation, 'id' | 'workspaceId' | 'channelId' | 'assignedAgentId'>, rating: number, at: string): Promise<void> {
  await remove(sql, c.id, ['csat', 'csat_satisfied'])
  const events: EventInput[] = [{ kind: 'csat', seq: 0, agentId: c.assignedAgentId, at, value: rating }]
  if (rating >= 4) events.push({ kind: 'csat_satisfied', seq: 0, agentId: c.assignedAgentId, at, value: rating })
  await record(sql, c, events)
}

/** A deleted conversation leaves every metric: its events go, and the rollups lose them. */
export async function forgetConversation(sql: Sql, conversationId: string): Promise<void> {
  await remove(sql, conversationId, null)
}

/** An SLA target met or breached: the conversation, the kind, its cycle and time. */
export interface SlaEvent {
  c: Pick<MetricConversation, 'id' | 'workspaceId' | 'channelId' | 'assignedAgentId'>
  kind: MetricKind
  cycle: number
  at: string
}

/**
 * SLA targets met or breached (API.md section 18, src/sla/sync.ts), of one conversation or of a
 * bulk request's many, in one statement; each attributed to the assignee at that moment; the key
 * (conversation, kind, cycle) makes a retry or a second replica count once.
 */
export async function recordSla(sql: Sql, events: SlaEvent[]): Promise<void> {
  await recordAll(sql, events.map((e) => ({ c: e.c, kind: e.kind, seq: e.cycle, agentId: e.c.assignedAgentId, at: e.at })))
}
