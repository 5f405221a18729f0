import type { CounterSnapshotView, ReconcileResultView, UnreadCountView } from '../../schemas/conversations.js'
import { memberOf, type Ctx } from '../context.js'
import type { Sql } from '../db/client.js'
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
 * locked row and the updated row and applies it in the same transaction. Reconcile takes the
 * workspace's advisory lock exclusively; writers take it shared before locking any row, so a
 * reconcile sees no half-applied change and writers never queue behind one another.
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

/** The advisory lock key of a workspace's counters (shared by writers, exclusive for reconcile). */
const lockName = (workspaceId: string) => `parley:unread:${workspaceId}`

/** Writers: call first in the transaction, before locking any conversation row. */
export async function lockCountersShared(sql: Sql, workspaceId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock_shared(hashtextextended(${lockName(workspaceId)}, 0))`
}

async function lockCountersExclusive(sql: Sql, workspaceId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${lockName(workspaceId)}, 0))`
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

function canonical(rows: ScopeRow[]): string {
  return JSON.stringify(
    rows
      .filter((r) => r.conversations !== 0 || r.messages !== 0)
      .map((r) => [r.scope, r.conversations, r.messages])
      .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  )
}


/**
 * Recomputes the workspace's unread state from the stored messages and seen marks and replaces
 * what differs. Runs under the workspace's advisory lock in exclusive mode: every writer holds it
 * shared for its whole transaction, so the recount sees no change half-applied.
 */
export async function reconcileCounters(ctx: Ctx): Promise<ReconcileResultView> {
  const { workspaceId } = memberOf(ctx)
  return ctx.sql.begin(async (q) => {
    await lockCountersExclusive(q, workspaceId)
    const beforeRows = await q<ScopeRow[]>`
      SELECT scope, sum(conversations)::int AS conversations, sum(messages)::int AS messages
      FROM unread_counters WHERE workspace_id = ${workspaceId} GROUP BY scope`
    // One statement: the recount of every live conversation from its messages, the fix of the
    // rows that disagree, and the scope totals of the recount.
    const [res] = await q<{ fixed: number; scopes: ScopeRow[] }[]>`
      WITH recount AS (
        SELECT c.id, c.status, c.channel_id, c.assigned_agent_id, c.unread_count, c.team_id,
               (SELECT count(*)::int FROM messages m
                 WHERE m.conversation_id = c.id AND m.sender_type = 'GUEST'
                   AND m.created_at > COALESCE(c.agent_last_seen_at, '-infinity')) AS n
        FROM conversations c
        WHERE c.workspace_id = ${workspaceId} AND c.deleted_at IS NULL
      ),
      fixed AS (
        UPDATE conversations c SET unread_count = r.n
        FROM recount r WHERE c.id = r.id AND c.unread_count <> r.n
        RETURNING c.id
      ),
      counted AS (
        SELECT * FROM recount WHERE status = 'OPEN' AND n > 0
      ),
      scopes AS (
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
      )
      SELECT (SELECT count(*)::int FROM fixed) AS fixed,
             COALESCE((SELECT json_agg(s) FROM scopes s), '[]'::json) AS scopes`
    const afterRows = res.scopes
    const countersDiffer = canonical(beforeRows) !== canonical(afterRows)
    if (countersDiffer) {
      await q`DELETE FROM unread_counters WHERE workspace_id = ${workspaceId}`
      const live = afterRows.filter((r) => r.conversations !== 0 || r.messages !== 0)
      if (live.length > 0) {
        await q`
          INSERT INTO unread_counters (workspace_id, scope, slot, conversations, messages)
          SELECT ${workspaceId}::uuid, s.scope, 0, s.conversations, s.messages
          FROM unnest(${live.map((r) => r.scope)}::text[], ${live.map((r) => r.conversations)}::int[],
                      ${live.map((r) => r.messages)}::int[]) AS s(scope, conversations, messages)`
      }
    }
    return {
      before: snapshot(beforeRows),
      after: snapshot(afterRows),
      conversationsFixed: res.fixed,
      corrected: countersDiffer || res.fixed > 0,
    }
  })
}
