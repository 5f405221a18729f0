import type { App } from '../../src/app.js'
import type { SeededGuest, SeededMember } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'

/** Small HTTP steps the analytics tests repeat. Each fails the test loudly on an unexpected status. */
export function steps(app: App) {
  const call = async (method: 'POST' | 'PATCH' | 'DELETE' | 'GET', url: string, headers: Record<string, string>, payload?: unknown, ok = [200, 201, 204]) => {
    const res = await app.inject({ method, url, headers, payload: payload as never })
    if (!ok.includes(res.statusCode)) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
    return res
  }
  return {
    start: (g: SeededGuest) => startConversation(app, g),
    guestSays: (id: string, g: SeededGuest, body = 'hello', clientMessageId?: string) =>
      call('POST', `/conversations/${id}/messages`, g.headers, { body, clientMessageId }),
    agentSays: (id: string, m: SeededMember, body = 'hi there', clientMessageId?: string) =>
      call('POST', `/conversations/${id}/messages`, m.headers, { body, clientMessageId }),
    close: (id: string, m: SeededMember) => call('PATCH', `/conversations/${id}/close`, m.headers),
    reopen: (id: string, m: SeededMember) => call('PATCH', `/conversations/${id}/reopen`, m.headers),
    assign: (id: string, m: SeededMember, agentId: string) => call('PATCH', `/conversations/${id}/assign-agent`, m.headers, { agentId }),
    remove: (id: string, m: SeededMember) => call('DELETE', `/conversations/${id}`, m.headers),
    get: async (url: string, m: SeededMember) => (await call('GET', url, m.headers)).json(),
  }
}

/**
 * Moves a conversation's recorded history in time (the clock cannot be set through HTTP): its
 * events keep their spacing, the creation lands on `at`; the conversation row follows, and the
 * rollups are rebuilt from the events, as after a bulk load.
 */
export async function moveConversation(app: App, conversationId: string, at: string): Promise<void> {
  const { sql } = app.deps
  await sql.begin(async (tx) => {
    const [{ shift }] = await tx<{ shift: string }[]>`
      SELECT (${at}::timestamptz - occurred_at)::text AS shift FROM metric_events
      WHERE conversation_id = ${conversationId} AND kind = 'conversation_created'`
    await tx`UPDATE metric_events SET occurred_at = occurred_at + ${shift}::interval WHERE conversation_id = ${conversationId}`
    await tx`UPDATE conversations SET created_at = created_at + ${shift}::interval WHERE id = ${conversationId}`
    await tx`SELECT metric_rebuild_rollups()`
  })
}

/**
 * metric_rollups of a workspace summed over their slots, rows that net to zero left out; the
 * `hist` of the agent dims' duration rows is spread into one entry per bucket (`...|hist|<bucket>`)
 * next to the row's own count and total, so a wrong bucket count in a `hist` shows as a
 * difference from a rebuild (metric_rebuild_rollups()).
 */
export const rollupState = (sql: App['deps']['sql'], ws: string) => sql<{ key: string; n: number; total: number }[]>`
  SELECT key, sum(n)::float8 AS n, round(sum(total)::numeric, 6)::float8 AS total
  FROM (
    SELECT concat_ws('|', dim, grain, period_start, channel_id, agent_id, team_id, kind, bucket) AS key, n, total
    FROM metric_rollups WHERE workspace_id = ${ws}
    UNION ALL
    SELECT concat_ws('|', r.dim, r.grain, r.period_start, r.channel_id, r.agent_id, r.team_id, r.kind, 'hist', h.key), h.value::bigint, 0
    FROM metric_rollups r CROSS JOIN LATERAL json_each_text(r.hist) h WHERE r.workspace_id = ${ws}
  ) s
  GROUP BY key HAVING sum(n) <> 0 ORDER BY key`
