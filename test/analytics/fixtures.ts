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
