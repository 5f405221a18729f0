import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'

/** PENDING and SNOOZED (API.md section 17): the status rules, counts, and timed wake-ups. */


t.test('pending and snooze: status rules, assignee kept, unread counts and the open cap count OPEN only', async (t) => {
  const { app } = await build(t, { env: { VISITOR_OPEN_CONVERSATIONS_MAX: '2' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const a = await startConversation(app, guest)
  const b = await startConversation(app, guest)
  const agent = ws.agent.headers
  const patch = (id: string, action: string, payload?: object) => app.inject({ method: 'PATCH', url: `/conversations/${id}/${action}`, headers: agent, payload })
  const say = (id: string) => app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers: guest.headers, payload: { body: 'hi' } })
  const unread = async () => (await app.inject({ method: 'GET', url: '/conversations/unread-count', headers: agent })).json()

  await patch(a.id, 'assign-agent', { agentId: ws.agent.userId })
  await say(a.id)
  await say(b.id)
  t.match(await unread(), { total: 2, mine: 1, unassigned: 1 })
  // At the cap of 2 open conversations: a third is refused...
  t.equal((await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: guest.channelId, guestId: guest.guestId } })).statusCode, 409)

  const pending = await patch(a.id, 'pending')
  t.equal(pending.statusCode, 200)
  t.match(pending.json(), { status: 'PENDING', assignedAgentId: ws.agent.userId, snoozedUntil: null, closedAt: null })
  t.match(await unread(), { total: 1, mine: 0, unassigned: 1 }, 'PENDING leaves unread-count')
  // ...but PENDING is not OPEN, so now one fits.
  const c = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: guest.channelId, guestId: guest.guestId } })
  t.equal(c.statusCode, 201, 'the open-conversation cap counts OPEN only')

  const until = new Date(Date.now() + 3600_000).toISOString()
  const snoozed = await patch(b.id, 'snooze', { until })
  t.match(snoozed.json(), { status: 'SNOOZED', snoozedUntil: until })
  t.match(await unread(), { total: 0 }, 'SNOOZED leaves unread-count')
  const [row] = await app.deps.sql`SELECT snoozed_until IS NOT NULL AS due FROM conversations WHERE id = ${b.id}`
  t.equal(row.due, true)

  for (const bad of [new Date(Date.now() - 1000).toISOString(), new Date(Date.now() + 367 * 86400_000).toISOString(), 'tomorrow']) {
    const res = await patch(b.id, 'snooze', { until: bad })
    t.equal(res.statusCode, 400, `until ${bad}`)
  }
  t.equal((await patch(b.id, 'snooze', {})).statusCode, 400, 'until is required (null: until the guest writes)')

  // A guest message wakes both, at once, and they count again.
  t.equal((await say(a.id)).statusCode, 201)
  t.equal((await say(b.id)).statusCode, 201, 'a guest message is never refused for the cap')
  const [wa, wb] = await Promise.all([a.id, b.id].map(async (id) => (await app.inject({ method: 'GET', url: `/conversations/${id}`, headers: agent })).json()))
  t.match(wa, { status: 'OPEN', assignedAgentId: ws.agent.userId, unreadCount: 2 })
  t.match(wb, { status: 'OPEN', snoozedUntil: null, unreadCount: 2 })
  t.match(await unread(), { total: 2, mine: 1, unassigned: 1 })

  // Snooze until the guest writes; reopen and close end it.
  t.match((await patch(a.id, 'snooze', { until: null })).json(), { status: 'SNOOZED', snoozedUntil: null })
  t.match((await patch(a.id, 'reopen')).json(), { status: 'OPEN' })
  await patch(a.id, 'snooze', { until })
  const closed = (await patch(a.id, 'close')).json()
  t.match(closed, { status: 'RESOLVED', snoozedUntil: null })
  t.ok(closed.closedAt)
  await patch(b.id, 'pending')
  t.match((await patch(b.id, 'close')).json(), { status: 'RESOLVED' })

  // The analytics reopen count: only resolved -> open is a reopen.
  const [m] = await app.deps.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM metric_events WHERE workspace_id = ${ws.workspaceId} AND kind = 'conversation_reopened'`
  t.equal(m.n, 0, 'waking or reopening a PENDING or SNOOZED conversation is no analytics reopen')

  const rec = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })
  t.equal(rec.json().corrected, false)
  // Only members with conversations:write; a visitor cannot.
  t.equal((await app.inject({ method: 'PATCH', url: `/conversations/${b.id}/pending`, headers: guest.headers })).statusCode, 401)
})
