import { randomUUID } from 'node:crypto'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents, patch, send, startConversation, unreadCount } from '../conversations/fixtures.js'
import { addToTeam, createTeam } from '../teams/fixtures.js'
import { rooms } from '../../src/events.js'

/** POST /conversations/bulk (API.md section 17). */

t.test('bulk: result rows in order, each as the single route, counters, events and analytics as singles', async (t) => {
  const { app, redisPrefix } = await build(t)
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const convs = []
  for (let i = 0; i < 4; i++) {
    const c = await startConversation(app, guest)
    await app.inject({ method: 'POST', url: `/conversations/${c.id}/messages`, headers: guest.headers, payload: { body: 'help' } })
    convs.push(c.id)
  }
  const foreign = await startConversation(app, await seedGuest(app, other))
  const bulk = (headers: Record<string, string>, payload: object) => app.inject({ method: 'POST', url: '/conversations/bulk', headers, payload })
  const unread = async () => (await app.inject({ method: 'GET', url: '/conversations/unread-count', headers: ws.agent.headers })).json()
  t.match(await unread(), { total: 4 })

  // Already closed before: the bulk close changes nothing for it (200, as the single route).
  await app.inject({ method: 'PATCH', url: `/conversations/${convs[3]}/close`, headers: ws.agent.headers })
  await events.settle()
  events.clear()
  const ids = [convs[0], foreign.id, 'not-a-uuid', convs[1], randomUUID(), convs[3]]
  const res = await bulk(ws.agent.headers, { ids, action: 'close' })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json().results, [
    { id: convs[0], statusCode: 200 },
    { id: foreign.id, statusCode: 404, code: 'CONVERSATION_NOT_FOUND' },
    { id: 'not-a-uuid', statusCode: 404, code: 'CONVERSATION_NOT_FOUND' },
    { id: convs[1], statusCode: 200 },
    { id: ids[4], statusCode: 404, code: 'CONVERSATION_NOT_FOUND' },
    { id: convs[3], statusCode: 200 },
  ])
  const rows = await app.deps.sql<{ id: string; status: string }[]>`SELECT id, status FROM conversations WHERE id = ANY(${[...convs, foreign.id]}::uuid[])`
  const status = Object.fromEntries(rows.map((r) => [r.id, r.status]))
  t.same([status[convs[0]], status[convs[1]], status[convs[2]], status[foreign.id]], ['RESOLVED', 'RESOLVED', 'OPEN', 'OPEN'])
  t.match(await unread(), { total: 1 }, 'counters moved as two single closes would')
  await events.settle()
  const updates = events.events.filter((e) => e.event === 'conversation:updated').map((e) => e.payload.conversation.id)
  t.same(updates, [convs[0], convs[1]], 'one conversation:updated per changed conversation, in order; none for the unchanged one')
  const [{ n }] = await app.deps.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM metric_events WHERE workspace_id = ${ws.workspaceId} AND kind = 'conversation_resolved'`
  t.equal(n, 3, 'one resolution sample per close, as singles (two bulk + the earlier single)')

  // Labels, priority, snooze, pending, assign, reopen.
  const label = (await app.inject({ method: 'POST', url: '/labels', headers: ws.admin.headers, payload: { name: 'billing', color: '#111111' } })).json()
  t.same((await bulk(ws.agent.headers, { ids: convs, action: 'labels:add', labelIds: [label.id] })).json().results.map((r: { statusCode: number }) => r.statusCode), [200, 200, 200, 200])
  const [{ k }] = await app.deps.sql<{ k: number }[]>`SELECT count(*)::int AS k FROM conversations WHERE label_ids @> ${[label.id]}::uuid[]`
  t.equal(k, 4)
  await bulk(ws.agent.headers, { ids: [convs[0]], action: 'labels:remove', labelIds: [label.id] })
  t.same((await app.inject({ method: 'GET', url: `/conversations/${convs[0]}`, headers: ws.agent.headers })).json().labels, [])
  await bulk(ws.agent.headers, { ids: [convs[2]], action: 'priority', priority: 'high' })
  await bulk(ws.agent.headers, { ids: [convs[2]], action: 'assign', agentId: ws.admin.userId })
  await bulk(ws.agent.headers, { ids: [convs[2]], action: 'snooze', until: null })
  t.match((await app.inject({ method: 'GET', url: `/conversations/${convs[2]}`, headers: ws.agent.headers })).json(), {
    status: 'SNOOZED',
    priority: 'high',
    assignedAgentId: ws.admin.userId,
    labels: [{ name: 'billing' }],
  })
  t.match(await unread(), { total: 0 })
  await bulk(ws.agent.headers, { ids: [convs[0], convs[2]], action: 'reopen' })
  t.match(await unread(), { total: 2 })
  const rec = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })
  t.equal(rec.json().corrected, false)
})

t.test('bulk: 403 for the whole request without the action permission; 400 before anything changes', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const a = (await startConversation(app, guest)).id
  const b = (await startConversation(app, guest)).id
  const bulk = (headers: Record<string, string>, payload: object) => app.inject({ method: 'POST', url: '/conversations/bulk', headers, payload })
  const live = async () => (await app.deps.sql`SELECT id FROM conversations WHERE deleted_at IS NULL AND id = ANY(${[a, b]}::uuid[])`).length

  const denied = await bulk(ws.agent.headers, { ids: [a, b], action: 'delete' })
  t.equal(denied.statusCode, 403, 'an agent has no conversations:delete')
  t.equal(denied.json().code, 'FORBIDDEN')
  t.equal(await live(), 2)

  const cases: [object, string][] = [
    [{ ids: [a, b], action: 'snooze', until: new Date(Date.now() - 1000).toISOString() }, 'VALIDATION_ERROR'],
    [{ ids: [a, b], action: 'snooze' }, 'VALIDATION_ERROR'],
    [{ ids: [a, b], action: 'assign', agentId: 'nobody' }, 'INVALID_AGENT'],
    [{ ids: [a, b], action: 'labels:add', labelIds: [randomUUID()] }, 'INVALID_LABEL'],
    [{ ids: [a, b], action: 'close', agentId: ws.agent.userId }, 'VALIDATION_ERROR'],
    [{ ids: [a, b], action: 'archive' }, 'VALIDATION_ERROR'],
    [{ ids: [], action: 'close' }, 'VALIDATION_ERROR'],
    [{ ids: Array.from({ length: 101 }, () => a), action: 'close' }, 'VALIDATION_ERROR'],
    [{ ids: [a], action: 'priority' }, 'VALIDATION_ERROR'],
  ]
  for (const [payload, code] of cases) {
    const res = await bulk(ws.owner.headers, payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 80))
    t.equal(res.json().code, code)
  }
  const [row] = await app.deps.sql`SELECT count(*)::int AS n FROM conversations WHERE status = 'OPEN' AND id = ANY(${[a, b]}::uuid[])`
  t.equal(row.n, 2, 'nothing changed')

  const del = await bulk(ws.owner.headers, { ids: [a, a], action: 'delete' })
  t.same(del.json().results, [
    { id: a, statusCode: 204 },
    { id: a, statusCode: 404, code: 'CONVERSATION_NOT_FOUND' },
  ], 'a repeated id is applied twice, in order, as two single calls: the second delete is a 404')
  t.equal(await live(), 1)
  t.equal((await app.inject({ method: 'POST', url: '/conversations/bulk', headers: guest.headers, payload: { ids: [b], action: 'close' } })).statusCode, 401)
})

t.test('bulk team: as PATCH /conversations/:id/team, parameters checked once, private teams hide rows', async (t) => {
  const { app, redisPrefix } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const insider = await ws.addMember('agent', 'Insider')
  const sales = await createTeam(app, ws.owner, { name: 'Sales' })
  const vip = await createTeam(app, ws.owner, { name: 'VIP', private: true })
  await addToTeam(app, ws.owner, vip.id, insider.userId)
  await addToTeam(app, ws.owner, sales.id, insider.userId)
  const foreignTeam = await createTeam(app, other.owner, { name: 'Theirs' })
  const guest = await seedGuest(app, ws)
  const convs: string[] = []
  for (let i = 0; i < 4; i++) {
    const c = await startConversation(app, guest)
    await send(app, guest.headers, c.id, 'hello')
    convs.push(c.id)
  }
  const [a, b, c, d] = convs
  const foreign = await startConversation(app, await seedGuest(app, other))
  const bulk = (headers: Record<string, string>, payload: object) => app.inject({ method: 'POST', url: '/conversations/bulk', headers, payload })
  const teamOf = async (id: string) => (await app.deps.sql<{ teamId: string | null }[]>`SELECT team_id AS "teamId" FROM conversations WHERE id = ${id}`)[0].teamId

  await t.test('400 for the whole request before anything changes', async (t) => {
    const cases: [object, string][] = [
      [{ ids: [a, b], action: 'team', teamId: randomUUID() }, 'INVALID_TEAM'],
      [{ ids: [a, b], action: 'team', teamId: foreignTeam.id }, 'INVALID_TEAM'],
      [{ ids: [a, b], action: 'team', teamId: 'not-a-team' }, 'INVALID_TEAM'],
      [{ ids: [a, b], action: 'team' }, 'VALIDATION_ERROR'],
      [{ ids: [a, b], action: 'team', teamId: 7 }, 'VALIDATION_ERROR'],
      [{ ids: [a, b], action: 'close', teamId: sales.id }, 'VALIDATION_ERROR'],
      [{ ids: [a, b], action: 'team', teamId: sales.id, agentId: ws.agent.userId }, 'VALIDATION_ERROR'],
    ]
    for (const [payload, code] of cases) {
      const res = await bulk(ws.agent.headers, payload)
      t.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 90))
      t.equal(res.json().code, code)
    }
    t.same([await teamOf(a), await teamOf(b)], [null, null], 'nothing changed')
    t.equal((await app.inject({ method: 'POST', url: '/conversations/bulk', headers: guest.headers, payload: { ids: [a], action: 'team', teamId: sales.id } })).statusCode, 401)
  })

  await t.test('each row as the single route: assignee kept only inside the team, history, events, counters', async (t) => {
    // a and c assigned to the insider (a member of Sales), b to the agent (not a member): the
    // move keeps the insider and unassigns the agent with reason TEAM_CHANGED, as the single route.
    await patch(app, ws.agent.headers, a, 'assign-agent', { agentId: insider.userId })
    await patch(app, ws.agent.headers, b, 'assign-agent', { agentId: ws.agent.userId })
    await patch(app, ws.agent.headers, c, 'assign-agent', { agentId: insider.userId })
    const single = await patch(app, ws.agent.headers, c, 'team', { teamId: sales.id })
    t.equal(single.statusCode, 200)
    await events.settle()
    events.clear()
    const res = await bulk(ws.agent.headers, { ids: [a, foreign.id, b, c], action: 'team', teamId: sales.id.toUpperCase() })
    t.equal(res.statusCode, 200, res.body)
    t.same(res.json().results, [
      { id: a, statusCode: 200 },
      { id: foreign.id, statusCode: 404, code: 'CONVERSATION_NOT_FOUND' },
      { id: b, statusCode: 200 },
      { id: c, statusCode: 200 },
    ])
    const get = async (id: string) => (await app.inject({ method: 'GET', url: `/conversations/${id}`, headers: ws.agent.headers })).json()
    t.match(await get(a), { teamId: sales.id, team: { id: sales.id, name: 'Sales' }, assignedAgentId: insider.userId })
    t.match(await get(b), { teamId: sales.id, assignedAgentId: null })
    t.match(await get(c), { teamId: sales.id, assignedAgentId: insider.userId })
    t.equal(await teamOf(foreign.id), null, "another workspace's conversation is untouched")
    const history = (await app.inject({ method: 'GET', url: `/conversations/${b}/assignment-history`, headers: ws.agent.headers })).json().data
    t.match(history[0], { action: 'UNASSIGNED', previousAgentId: ws.agent.userId, byUserId: ws.agent.userId, reason: 'TEAM_CHANGED' })
    await events.settle()
    const updates = events.events.filter((e) => e.event === 'conversation:updated').map((e) => e.payload.conversation.id)
    t.same(updates, [a, b], 'one conversation:updated per changed conversation, in order; none for c (already in Sales)')
    const counts = await unreadCount(app, ws, ws.agent)
    t.equal(counts.byTeam[sales.id], 3, 'byTeam moved as singles would')
    t.equal((await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })).json().corrected, false)
  })

  await t.test('private team: moved in as by the single route, then hidden from an outsider, not from an insider', async (t) => {
    events.clear()
    const res = await bulk(ws.agent.headers, { ids: [d], action: 'team', teamId: vip.id })
    t.same(res.json().results, [{ id: d, statusCode: 200 }], 'an agent may move a conversation it sees into a private team, as the single route')
    const update = await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.id === d)
    t.notOk(update.rooms.includes(rooms.workspace(ws.workspaceId)), 'the event reaches only who may see it')
    t.ok(update.rooms.includes(rooms.member(ws.workspaceId, insider.userId)))
    t.notOk(update.rooms.includes(rooms.member(ws.workspaceId, ws.agent.userId)))

    // The outsider may not act on it any more: a 404 row, and the rest still applied.
    const outsider = await bulk(ws.agent.headers, { ids: [d, a], action: 'team', teamId: null })
    t.same(outsider.json().results, [
      { id: d, statusCode: 404, code: 'CONVERSATION_NOT_FOUND' },
      { id: a, statusCode: 200 },
    ])
    t.equal(await teamOf(d), vip.id, 'the hidden one kept its team')
    t.equal(await teamOf(a), null, 'teamId null takes the visible one out of its team')
    const closed = await bulk(ws.agent.headers, { ids: [d], action: 'close' })
    t.same(closed.json().results, [{ id: d, statusCode: 404, code: 'CONVERSATION_NOT_FOUND' }], 'whatever the action')
    const inside = await bulk(insider.headers, { ids: [d], action: 'team', teamId: sales.id })
    t.same(inside.json().results, [{ id: d, statusCode: 200 }], 'a member of the private team sees and moves it')
    t.equal(await teamOf(d), sales.id)
    t.equal((await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.admin.headers })).json().corrected, false)
  })

  await t.test('one bulk over a private team, a public team and no team: each event to its own team\'s rooms (read once per team)', async (t) => {
    await bulk(insider.headers, { ids: [d], action: 'team', teamId: vip.id })
    await bulk(insider.headers, { ids: [b], action: 'team', teamId: null })
    events.clear()
    const res = await bulk(insider.headers, { ids: [c, d, b, a], action: 'priority', priority: 'low' })
    t.ok(res.json().results.every((r: { statusCode: number }) => r.statusCode === 200), res.body)
    await events.settle()
    const roomsOf = (id: string) => events.events.find((e) => e.event === 'conversation:updated' && e.payload.conversation.id === id)!.rooms
    for (const id of [a, b, c]) t.ok(roomsOf(id).includes(rooms.workspace(ws.workspaceId)), 'a public or no team: the workspace room')
    t.notOk(roomsOf(d).includes(rooms.workspace(ws.workspaceId)), 'the private team: not the workspace room')
    t.ok(roomsOf(d).includes(rooms.member(ws.workspaceId, insider.userId)), 'its member')
    t.notOk(roomsOf(d).includes(rooms.member(ws.workspaceId, ws.agent.userId)), 'not an outsider')
  })
})
