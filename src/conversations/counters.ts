import type { CounterSnapshotView, ReconcileResultView, UnreadCountView } from '../../schemas/conversations.js'
import { memberOf, type Ctx } from '../context.js'
import type { Pool, Sql } from '../db/client.js'
import type { conversations } from '../db/schema.js'
import { hiddenTeams } from './visibility.js'

/**
 * Unread counters (API.md section 5, DESIGN-NOTES "Unread counters that never drift").
 *
 * Per conversation: `unread_count` on the row = guest messages created after `agent_last_seen_at`.
 * Per workspace: rows of unread_counters by scope ('all', 'unassigned', 'agent:<userId>',
 * 'channel:<id>'), each spread over UNREAD_SLOTS slot rows, holding the OPEN, live conversations
 * with unread > 0 (`conversations`) and their unread messages (`messages`).
 *
 * Every operation that changes a conversation computes `countersDelta(before, after)` from the
 * locked row and the updated row and applies it in the same transaction, so any snapshot sees a
 * row change and its counter delta both or neither: what lets reconcile compare them online,
 * without holding writers (reconcileCounters below).
 */

/** Slot rows per scope: a writer picks one at random, a reader sums them. */
export const UNREAD_SLOTS = 4

/** What of a conversation the counters depend on. `null`: the conversation does not exist. */
export type CounterState = Pick<typeof conversations.$inferSelect, 'status' | 'assignedAgentId' | 'channelId' | 'unreadCount'> & {
  /** deleted_at IS NOT NULL */
  deleted: boolean
  /**
   * Its team: counted per team too ('team:<id>', 'team-unassigned:<id>', and per team and channel
   * 'team-channel:<id>:<channelId>' for byChannel), so private teams are left out in O(1).
   */
  teamId?: string | null
}

export interface ScopeDelta {
  conversations: number
  messages: number
}

export type CountersDelta = Map<string, ScopeDelta>

/** The scopes a conversation in this state counts in, with what it adds to each. */
function contribution(s: CounterState | null): CountersDelta {
  const out: CountersDelta = new Map()
  if (!s || s.deleted || s.status !== 'OPEN' || s.unreadCount <= 0) return out
  const add = { conversations: 1, messages: s.unreadCount }
  out.set('all', add)
  out.set(s.assignedAgentId ? `agent:${s.assignedAgentId}` : 'unassigned', add)
  out.set(`channel:${s.channelId}`, add)
  if (s.teamId) {
    out.set(`team:${s.teamId}`, add)
    out.set(`team-channel:${s.teamId}:${s.channelId}`, add)
    if (!s.assignedAgentId) out.set(`team-unassigned:${s.teamId}`, add)
  }
  return out
}

/**
 * The change to every counter scope when a conversation goes from `before` to `after`.
 * Pure; scopes whose delta is zero are left out. Used by every operation, so none forgets a scope.
 */
export function countersDelta(before: CounterState | null, after: CounterState | null): CountersDelta {
  const delta: CountersDelta = new Map()
  for (const [scope, v] of contribution(after)) delta.set(scope, { ...v })
  for (const [scope, v] of contribution(before)) {
    const d = delta.get(scope) ?? { conversations: 0, messages: 0 }
    delta.set(scope, { conversations: d.conversations - v.conversations, messages: d.messages - v.messages })
  }
  for (const [scope, d] of delta) if (d.conversations === 0 && d.messages === 0) delta.delete(scope)
  return delta
}

/**
 * The advisory lock key of a workspace's counters. Writers take it shared; since reconcile went
 * online (issue 31) nothing takes it exclusively, so it orders nothing any more (docs/conversations.md).
 */
const lockName = (workspaceId: string) => `parley:unread:${workspaceId}`

/** Writers: call first in the transaction, before locking any conversation row. */
export async function lockCountersShared(sql: Sql, workspaceId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock_shared(hashtextextended(${lockName(workspaceId)}, 0))`
}

/**
 * Adds the delta to one random slot of each scope, in one statement. Scopes are written in sorted
 * order so two transactions that share slot rows lock them in the same order (no deadlock).
 */
export async function applyCountersDelta(sql: Sql, workspaceId: string, delta: CountersDelta): Promise<void> {
  if (delta.size === 0) return
  const slot = Math.floor(Math.random() * UNREAD_SLOTS)
  const scopes = [...delta.keys()].sort()
  await sql`
    INSERT INTO unread_counters (workspace_id, scope, slot, conversations, messages)
    SELECT ${workspaceId}::uuid, s.scope, ${slot}, s.conversations, s.messages
    FROM unnest(${scopes}::text[], ${scopes.map((s) => delta.get(s)!.conversations)}::int[],
                ${scopes.map((s) => delta.get(s)!.messages)}::int[]) WITH ORDINALITY AS s(scope, conversations, messages, n)
    ORDER BY s.n
    ON CONFLICT (workspace_id, scope, slot) DO UPDATE
      SET conversations = unread_counters.conversations + excluded.conversations,
          messages = unread_counters.messages + excluded.messages`
}

/**
 * GET /conversations/unread-count: sums the slot rows of the workspace's scopes (PK range scan).
 * Private teams the caller may not see (`hiddenTeams`, src/conversations/visibility.ts) are
 * subtracted from the totals and from byChannel through their own scopes (per team and channel
 * only for the hidden teams): still a handful of rows, whatever the size.
 */
export async function readUnreadCount(ctx: Ctx): Promise<UnreadCountView> {
  const { workspaceId, userId } = memberOf(ctx)
  const hidden = new Set(await hiddenTeams(ctx))
  const rows = await ctx.sql<{ scope: string; conversations: number; messages: number }[]>`
    SELECT scope, sum(conversations)::int AS conversations, sum(messages)::int AS messages
    FROM unread_counters
    WHERE workspace_id = ${workspaceId}
      AND (scope IN ('all', 'unassigned', ${`agent:${userId}`}) OR scope LIKE 'channel:%' OR scope LIKE 'team:%'
           OR scope LIKE 'team-unassigned:%' OR scope LIKE ANY(${[...hidden].map((t) => `team-channel:${t}:%`)}::text[]))
    GROUP BY scope`
  const out: UnreadCountView = { total: 0, mine: 0, unassigned: 0, messages: 0, byChannel: {}, byTeam: {} }
  const hiddenByChannel = new Map<string, number>()
  for (const r of rows) {
    if (r.scope === 'all') {
      out.total += r.conversations
      out.messages += r.messages
    } else if (r.scope === 'unassigned') out.unassigned += r.conversations
    else if (r.scope.startsWith('agent:')) out.mine = r.conversations
    else if (r.scope.startsWith('channel:') && r.conversations !== 0) out.byChannel[r.scope.slice(8)] = r.conversations
    else if (r.scope.startsWith('team:')) {
      const team = r.scope.slice(5)
      if (hidden.has(team)) {
        out.total -= r.conversations
        out.messages -= r.messages
      } else if (r.conversations !== 0) out.byTeam[team] = r.conversations
    } else if (r.scope.startsWith('team-unassigned:') && hidden.has(r.scope.slice(16))) out.unassigned -= r.conversations
    else if (r.scope.startsWith('team-channel:')) {
      const [team, channel] = r.scope.slice(13).split(':')
      if (hidden.has(team)) hiddenByChannel.set(channel, (hiddenByChannel.get(channel) ?? 0) + r.conversations)
    }
  }
  // byChannel leaves out the hidden teams' conversations too (their per-channel scopes).
  for (const [channel, n] of hiddenByChannel) {
    const left = (out.byChannel[channel] ?? 0) - n
    if (left !== 0) out.byChannel[channel] = left
    else delete out.byChannel[channel]
  }
  return out
}

type ScopeRow = { scope: string; conversations: number; messages: number }

/** Every scope of a workspace, summed over slots, zero scopes left out: what reconcile compares. */
function snapshot(rows: ScopeRow[]): CounterSnapshotView {
  const out: CounterSnapshotView = { total: 0, unassigned: 0, messages: 0, byAgent: {}, byChannel: {} }
  for (const r of rows) {
    if (r.conversations === 0 && r.messages === 0) continue
    if (r.scope === 'all') {
      out.total = r.conversations
      out.messages = r.messages
    } else if (r.scope === 'unassigned') out.unassigned = r.conversations
    else if (r.scope.startsWith('agent:')) out.byAgent[r.scope.slice(6)] = { conversations: r.conversations, messages: r.messages }
    else if (r.scope.startsWith('channel:')) out.byChannel[r.scope.slice(8)] = { conversations: r.conversations, messages: r.messages }
  }
  return out
}

/** The workspace's counters, summed over slots per scope. */
async function counterSums(sql: Sql, workspaceId: string): Promise<ScopeRow[]> {
  return sql<ScopeRow[]>`
    SELECT scope, sum(conversations)::int AS conversations, sum(messages)::int AS messages
    FROM unread_counters WHERE workspace_id = ${workspaceId} GROUP BY scope`
}

/** Drifted conversations fixed per transaction: each holds at most this many rows. */
const FIX_CHUNK = 50

/** Adds `d` into `into` (scope by scope). */
function addInto(into: CountersDelta, d: CountersDelta): void {
  for (const [scope, v] of d) {
    const x = into.get(scope) ?? { conversations: 0, messages: 0 }
    into.set(scope, { conversations: x.conversations + v.conversations, messages: x.messages + v.messages })
  }
  for (const [scope, v] of into) if (v.conversations === 0 && v.messages === 0) into.delete(scope)
}

type LockedCounterRow = CounterState & { id: string }

/**
 * Sets `unread_count` of the given (locked) conversations to their recount from messages and
 * applies the counter delta, as any writer does. The recount is a statement after the one that
 * took the row locks, so its snapshot holds every message committed by the writers before us.
 */
async function recountLocked(q: Sql, workspaceId: string, rows: LockedCounterRow[]): Promise<number> {
  if (rows.length === 0) return 0
  const fixed = await q<{ id: string; unreadCount: number }[]>`
    UPDATE conversations c SET unread_count = r.n
    FROM (SELECT c2.id, (SELECT count(*)::int FROM messages m
                          WHERE m.conversation_id = c2.id AND m.sender_type = 'GUEST'
                            AND m.created_at > COALESCE(c2.agent_last_seen_at, '-infinity')) AS n
          FROM conversations c2 WHERE c2.id = ANY(${rows.map((r) => r.id)}::uuid[])) r
    WHERE c.id = r.id AND c.unread_count <> r.n
    RETURNING c.id, c.unread_count AS "unreadCount"`
  const byId = new Map(rows.map((r) => [r.id, r]))
  const delta: CountersDelta = new Map()
  for (const f of fixed) {
    const before = byId.get(f.id)!
    addInto(delta, countersDelta(before, { ...before, unreadCount: f.unreadCount }))
  }
  await applyCountersDelta(q, workspaceId, delta)
  return fixed.length
}

const LOCKED_COLUMNS = (q: Sql) => q`id, status, deleted_at IS NOT NULL AS deleted, assigned_agent_id AS "assignedAgentId",
  channel_id AS "channelId", unread_count AS "unreadCount", team_id AS "teamId"`

/**
 * Fixes the `unread_count` of conversations a lock-free read found drifted. Chunks of FIX_CHUNK
 * rows, each its own short transaction that never waits for a writer's row: `SKIP LOCKED`, and a
 * `lock_timeout` of 20 ms on the counter slot rows (a timeout rolls the chunk back), so a writer
 * waiting for one of its rows waits a few tens of ms at most. What a chunk
 * could not take is then fixed one conversation per transaction, waiting for its row as any
 * writer does, holding nothing else. Every recount happens under the row lock, so a read that
 * raced a writer is checked again: only a real drift is rewritten and counted.
 */
async function fixUnreadCounts(pool: Pool, workspaceId: string, ids: string[]): Promise<number> {
  let fixed = 0
  const waitFor: string[] = []
  for (let i = 0; i < ids.length; i += FIX_CHUNK) {
    const chunk = ids.slice(i, i + FIX_CHUNK)
    try {
      const out = await pool.begin(async (q) => {
        await q`SET LOCAL lock_timeout = '20ms'`
        await lockCountersShared(q, workspaceId)
        const rows = await q<LockedCounterRow[]>`
          SELECT ${LOCKED_COLUMNS(q)} FROM conversations
          WHERE id = ANY(${chunk}::uuid[]) AND workspace_id = ${workspaceId} AND deleted_at IS NULL
          ORDER BY id FOR UPDATE SKIP LOCKED`
        const taken = new Set(rows.map((r) => r.id))
        return { n: await recountLocked(q, workspaceId, rows), skipped: chunk.filter((id) => !taken.has(id)) }
      })
      fixed += out.n
      waitFor.push(...out.skipped)
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03') throw err // lock_not_available
      waitFor.push(...chunk)
    }
  }
  for (const id of waitFor) {
    fixed += await pool.begin(async (q) => {
      await lockCountersShared(q, workspaceId)
      // Skipped because deleted (or gone) rather than locked: nothing to fix.
      const rows = await q<LockedCounterRow[]>`
        SELECT ${LOCKED_COLUMNS(q)} FROM conversations
        WHERE id = ${id} AND workspace_id = ${workspaceId} AND deleted_at IS NULL FOR UPDATE`
      return recountLocked(q, workspaceId, rows)
    })
  }
  return fixed
}

/**
 * Counters minus the scope sums of the conversation rows as stored, scope by scope (only those
 * that differ): one statement, so one snapshot of both tables. Every writer changes a row and
 * applies its delta in one transaction, so a snapshot sees both or neither: this difference is
 * the drift, and a correct writer committing later leaves it unchanged (it moves both sides).
 */
async function counterDrift(sql: Sql, workspaceId: string): Promise<ScopeRow[]> {
  // conv_open_unread_idx: only the OPEN conversations are read.
  return sql<ScopeRow[]>`
    WITH counted AS (
      SELECT channel_id, assigned_agent_id, team_id, unread_count AS n FROM conversations
      WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL AND status = 'OPEN' AND unread_count > 0
    ),
    truth AS (
      SELECT 'all' AS scope, count(*)::int AS conversations, COALESCE(sum(n), 0)::int AS messages FROM counted
      UNION ALL
      SELECT CASE WHEN assigned_agent_id IS NULL THEN 'unassigned' ELSE 'agent:' || assigned_agent_id END,
             count(*)::int, sum(n)::int
      FROM counted GROUP BY 1
      UNION ALL
      SELECT 'channel:' || channel_id, count(*)::int, sum(n)::int FROM counted GROUP BY channel_id
      UNION ALL
      SELECT 'team:' || team_id, count(*)::int, sum(n)::int FROM counted WHERE team_id IS NOT NULL GROUP BY team_id
      UNION ALL
      SELECT 'team-unassigned:' || team_id, count(*)::int, sum(n)::int FROM counted
      WHERE team_id IS NOT NULL AND assigned_agent_id IS NULL GROUP BY team_id
      UNION ALL
      SELECT 'team-channel:' || team_id || ':' || channel_id, count(*)::int, sum(n)::int FROM counted
      WHERE team_id IS NOT NULL GROUP BY team_id, channel_id
    ),
    stored AS (
      SELECT scope, sum(conversations)::int AS conversations, sum(messages)::int AS messages
      FROM unread_counters WHERE workspace_id = ${workspaceId} GROUP BY scope
    )
    SELECT scope, (COALESCE(s.conversations, 0) - COALESCE(t.conversations, 0))::int AS conversations,
           (COALESCE(s.messages, 0) - COALESCE(t.messages, 0))::int AS messages
    FROM stored s FULL JOIN truth t USING (scope)
    WHERE COALESCE(s.conversations, 0) <> COALESCE(t.conversations, 0) OR COALESCE(s.messages, 0) <> COALESCE(t.messages, 0)`
}

/** One reconcile batch: how many rows it read, its last key, and the ids whose unread_count differs. */
type BatchRecount = { rows: number; lastAt: string | null; lastId: string | null; drifted: string[] }

/**
 * GET /conversations/counts/reconcile, online: it takes no workspace-wide lock, and no writer
 * waits for it longer than one short transaction on a few of its rows (docs/conversations.md).
 *
 * 1. Every live conversation's `unread_count` is recounted from messages and the seen mark, in
 *    keyset batches of RECONCILE_BATCH over conv_created_idx (plain reads, no locks). Those that
 *    differ are fixed under their row lock as a writer would (fixUnreadCounts).
 * 2. The counters are compared with the rows in one snapshot (counterDrift) and the difference is
 *    subtracted as one more delta (a random slot per scope, as writers add theirs).
 * `before` and `after` are the counters read before step 1 and after step 2.
 */
export async function reconcileCounters(ctx: Ctx): Promise<ReconcileResultView> {
  const { workspaceId } = memberOf(ctx)
  const batch = ctx.config.RECONCILE_BATCH
  const sql = ctx.sql
  const beforeRows = await counterSums(sql, workspaceId)

  let fixed = 0
  let after: { at: string; id: string } | null = null
  for (;;) {
    const [b]: BatchRecount[] = await sql<BatchRecount[]>`
      WITH b AS (
        SELECT id, created_at, unread_count, agent_last_seen_at FROM conversations
        WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL
          ${after ? sql`AND (created_at, id) > (${after.at}::timestamptz, ${after.id}::uuid)` : sql``}
        ORDER BY created_at, id
        LIMIT ${batch}
      ),
      r AS (
        SELECT b.id, b.created_at, b.unread_count,
               (SELECT count(*)::int FROM messages m
                 WHERE m.conversation_id = b.id AND m.sender_type = 'GUEST'
                   AND m.created_at > COALESCE(b.agent_last_seen_at, '-infinity')) AS n
        FROM b
      )
      SELECT count(*)::int AS rows, max(created_at) AS "lastAt",
             (array_agg(id::text ORDER BY created_at DESC, id DESC))[1] AS "lastId",
             COALESCE(array_agg(id::text) FILTER (WHERE n <> unread_count), '{}') AS drifted
      FROM r`
    if (!b) break
    if (b.drifted.length > 0) fixed += await fixUnreadCounts(sql, workspaceId, b.drifted)
    if (b.rows < batch) break
    after = { at: b.lastAt!, id: b.lastId! }
  }

  // Read and corrected in one transaction, one reconcile of the workspace at a time (a lock of
  // their own: writers never take it): two reconciles that read the same drift would otherwise
  // both subtract it. The drift statement runs after the lock, so it sees the other's correction.
  const drift = await sql.begin(async (q) => {
    await q`SELECT pg_advisory_xact_lock(hashtextextended(${`parley:reconcile:${workspaceId}`}, 0))`
    await lockCountersShared(q, workspaceId)
    const found = await counterDrift(q, workspaceId)
    if (found.length > 0) {
      const correction: CountersDelta = new Map(found.map((d) => [d.scope, { conversations: -d.conversations, messages: -d.messages }]))
      await applyCountersDelta(q, workspaceId, correction)
    }
    return found
  })
  const afterRows = await counterSums(sql, workspaceId)
  return {
    before: snapshot(beforeRows),
    after: snapshot(afterRows),
    conversationsFixed: fixed,
    corrected: fixed > 0 || drift.length > 0,
  }
}
