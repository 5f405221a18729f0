import t from 'tap'
import { build, seedGuest, seedWorkspace, type SeededMember } from '../helper.js'
import { patch, startConversation } from '../conversations/fixtures.js'
import { connect, startGateway } from '../gateway/fixtures.js'
import { addToTeam, createTeam, openCounts, presenceOf, setDefaultTeam, until } from './fixtures.js'

/**
 * Routing (API.md section 16, docs/routing.md) with two API replicas on one database and one
 * Redis prefix: never twice, never over capacity, first come first served, the stored order.
 */
t.test('two replicas, 200 concurrent conversations, 5 online agents of capacity 3', async (t) => {
  const a = await build(t)
  const b = await build(t, { databaseUrl: a.databaseUrl, env: { REDIS_PREFIX: a.redisPrefix } })
  const ws = await seedWorkspace(a.app)
  const team = await createTeam(a.app, ws.admin, { name: 'Support', assignment: 'round_robin', capacity: 3 })
  await setDefaultTeam(a.app, ws, team.id)
  const agents: SeededMember[] = []
  const presence = presenceOf(a.app, a.redisPrefix)
  for (let i = 0; i < 5; i++) {
    const m = await ws.addMember('agent')
    agents.push(m)
    await addToTeam(a.app, ws.admin, team.id, m.userId)
    await presence.online(ws.workspaceId, m.userId)
  }
  const guests = await Promise.all(Array.from({ length: 200 }, (_, i) => seedGuest(a.app, ws, `Guest ${i}`)))
  await Promise.all(guests.map((g, i) => startConversation(i % 2 === 0 ? a.app : b.app, g)))

  const assignedCount = async () => Object.values(await openCounts(a.app, ws.workspaceId)).reduce((x, y) => x + y, 0)
  await until(async () => (await assignedCount()) === 15, 5000)
  await new Promise((r) => setTimeout(r, 1500)) // more sweeps of both replicas: nothing more may move
  const counts = await openCounts(a.app, ws.workspaceId)
  t.equal(Object.values(counts).reduce((x, y) => x + y, 0), 15, 'exactly 15 assigned')
  t.same(Object.keys(counts).sort(), agents.map((m) => m.userId).sort(), 'every agent got work')
  t.ok(Object.values(counts).every((n) => n === 3), `nobody over 3: ${JSON.stringify(Object.values(counts))}`)
  const [auto] = await a.app.deps.sql<{ entries: number; conversations: number }[]>`
    SELECT count(*)::int AS entries, count(DISTINCT conversation_id)::int AS conversations
    FROM assignment_history WHERE workspace_id = ${ws.workspaceId} AND reason = 'AUTO'`
  t.same(auto, { entries: 15, conversations: 15 }, 'no conversation auto-assigned twice')

  const queue = (await a.app.inject({ method: 'GET', url: `/teams/${team.id}/queue`, headers: ws.agent.headers })).json().data
  t.equal(queue.length, 185, 'the rest queued')
  const [queuedOrder] = await a.app.deps.sql<{ ok: boolean }[]>`
    SELECT bool_and(q.queued_at >= prev) AS ok FROM (
      SELECT queued_at, lag(queued_at, 1, '-infinity') OVER (ORDER BY queued_at, id) AS prev FROM conversations
      WHERE team_id = ${team.id} AND queued_at IS NOT NULL) q`
  t.ok(queuedOrder.ok)

  // Each freed slot goes to the oldest queued conversation, whichever replica frees it.
  const assigned = await a.app.deps.sql<{ id: string; agent: string }[]>`
    SELECT id, assigned_agent_id AS agent FROM conversations WHERE team_id = ${team.id} AND assigned_agent_id IS NOT NULL ORDER BY id LIMIT 3`
  const oldest = queue.slice(0, 3).map((q: { conversationId: string }) => q.conversationId)
  for (const [i, c] of assigned.entries()) {
    const res = await patch(i % 2 === 0 ? a.app : b.app, ws.admin.headers, c.id, 'close')
    t.equal(res.statusCode, 200)
  }
  await until(async () => {
    const rows = await a.app.deps.sql`SELECT 1 FROM conversations WHERE id = ANY(${oldest}::uuid[]) AND assigned_agent_id IS NOT NULL`
    return rows.length === 3
  }, 2500)
  const after = await openCounts(a.app, ws.workspaceId)
  t.ok(Object.values(after).every((n) => n <= 3), 'still nobody over 3')
  t.equal(Object.values(after).reduce((x, y) => x + y, 0), 15)
  const next = (await a.app.inject({ method: 'GET', url: `/teams/${team.id}/queue`, headers: ws.agent.headers })).json().data
  t.same(next[0].conversationId, queue[3].conversationId, 'the fourth oldest is now first')
  const reconcile = await a.app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.owner.headers })
  t.equal(reconcile.json().corrected, false)
})

t.test('a restart in the middle of a round robin continues the order; balanced picks the fewest open', async (t) => {
  const first = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const ws = await seedWorkspace(first.app)
  const team = await createTeam(first.app, ws.admin, { name: 'RR', assignment: 'round_robin' })
  await setDefaultTeam(first.app, ws, team.id)
  const presence = presenceOf(first.app, first.redisPrefix)
  const agents: SeededMember[] = []
  for (let i = 0; i < 3; i++) {
    const m = await ws.addMember('agent')
    agents.push(m)
    await addToTeam(first.app, ws.admin, team.id, m.userId)
    await presence.online(ws.workspaceId, m.userId)
  }
  agents.sort((x, y) => (x.userId < y.userId ? -1 : 1))
  const guest = await seedGuest(first.app, ws)
  const assigneeOf = async (app: typeof first.app, id: string) => {
    let agent: string | null = null
    await until(async () => {
      const [row] = await app.deps.sql<{ agent: string | null }[]>`SELECT assigned_agent_id AS agent FROM conversations WHERE id = ${id}`
      agent = row.agent
      return agent !== null
    }, 2000)
    return agent
  }
  const order: (string | null)[] = []
  for (let i = 0; i < 2; i++) order.push(await assigneeOf(first.app, (await startConversation(first.app, guest)).id))
  await first.app.close()

  const second = await build(t, { databaseUrl: first.databaseUrl, env: { REDIS_PREFIX: first.redisPrefix, ROUTING_SWEEP_MS: '0' } })
  for (let i = 0; i < 2; i++) order.push(await assigneeOf(second.app, (await startConversation(second.app, guest)).id))
  t.same(order, [agents[0].userId, agents[1].userId, agents[2].userId, agents[0].userId], 'never assigned first (ties by userId), then the oldest last assignment')

  // balanced: agents[0] has 2 open, the others 1; closing one of agents[1]'s makes them the fewest.
  await second.app.inject({ method: 'PATCH', url: `/teams/${team.id}`, headers: ws.admin.headers, payload: { assignment: 'balanced' } })
  const [ofAgent1] = await second.app.deps.sql<{ id: string }[]>`SELECT id FROM conversations WHERE assigned_agent_id = ${agents[1].userId}`
  await patch(second.app, ws.admin.headers, ofAgent1.id, 'close')
  const next = await assigneeOf(second.app, (await startConversation(second.app, guest)).id)
  t.equal(next, agents[1].userId, 'balanced: the fewest OPEN assigned')
})

t.test('a member coming online through a real gateway gets the queued conversation within 2 s (signal, no sweep)', async (t) => {
  const api = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const gateway = await startGateway(t, { databaseUrl: api.databaseUrl, redisPrefix: api.redisPrefix })
  const ws = await seedWorkspace(api.app)
  const team = await createTeam(api.app, ws.admin, { name: 'Night', assignment: 'balanced', capacity: 1 })
  await setDefaultTeam(api.app, ws, team.id)
  await addToTeam(api.app, ws.admin, team.id, ws.agent.userId)
  // Let the API's signal subscription settle.
  await new Promise((r) => setTimeout(r, 200))
  const guest = await seedGuest(api.app, ws)
  const c = await startConversation(api.app, guest)
  const c2 = await startConversation(api.app, guest)
  t.ok(c.queuedAt, 'queued while nobody is online')
  const visitor = await connect(t, gateway.url, { visitorSession: guest.session })
  const updates: { conversation: { id: string; assignedAgentId: string | null; queue?: unknown } }[] = []
  visitor.on('conversation:updated', (p) => updates.push(p))
  await new Promise((r) => setTimeout(r, 100))

  const started = Date.now()
  await connect(t, gateway.url, { token: ws.agent.token, workspaceId: ws.workspaceId })
  await until(async () => {
    const [row] = await api.app.deps.sql<{ agent: string | null }[]>`SELECT assigned_agent_id AS agent FROM conversations WHERE id = ${c.id}`
    return row.agent === ws.agent.userId
  }, 2000)
  t.ok(Date.now() - started < 2000, `assigned ${Date.now() - started} ms after the member came online`)
  const [second] = await api.app.deps.sql<{ agent: string | null; queued: boolean }[]>`
    SELECT assigned_agent_id AS agent, queued_at IS NOT NULL AS queued FROM conversations WHERE id = ${c2.id}`
  t.same(second, { agent: null, queued: true }, 'capacity 1: the second stays queued')
  await until(async () => updates.some((u) => u.conversation.id === c.id && u.conversation.assignedAgentId === ws.agent.userId), 2000)
  await until(async () => updates.some((u) => u.conversation.id === c2.id && JSON.stringify(u.conversation.queue) === JSON.stringify({ position: 1, estimatedWaitSeconds: null })), 2000)
  t.pass('the visitor heard of the assignment and of its new place')
})

t.test('an assigned conversation turning PENDING frees its slot: the queued one is assigned (trigger, no sweep)', async (t) => {
  const { app, redisPrefix } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const ws = await seedWorkspace(app)
  const team = await createTeam(app, ws.admin, { name: 'One slot', assignment: 'round_robin', capacity: 1 })
  await setDefaultTeam(app, ws, team.id)
  await addToTeam(app, ws.admin, team.id, ws.agent.userId)
  await presenceOf(app, redisPrefix).online(ws.workspaceId, ws.agent.userId)
  const guest = await seedGuest(app, ws)
  const first = await startConversation(app, guest)
  const second = await startConversation(app, guest)
  const agentOf = async (id: string) =>
    (await app.deps.sql<{ agent: string | null }[]>`SELECT assigned_agent_id AS agent FROM conversations WHERE id = ${id}`)[0].agent
  await until(async () => (await agentOf(first.id)) === ws.agent.userId, 2000)
  t.equal(await agentOf(second.id), null, 'capacity 1: the second waits')
  const pending = await patch(app, ws.agent.headers, first.id, 'pending')
  t.equal(pending.json().status, 'PENDING')
  await until(async () => (await agentOf(second.id)) === ws.agent.userId, 2000)
  t.pass('the second was assigned once the first turned PENDING (PENDING does not count toward capacity)')
})

t.test('one pass assigning a batch keeps the round-robin order, in the pass and stored for the next', async (t) => {
  const { app, redisPrefix } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const ws = await seedWorkspace(app)
  const team = await createTeam(app, ws.admin, { name: 'Batch', assignment: 'round_robin', capacity: 3 })
  await setDefaultTeam(app, ws, team.id)
  const presence = presenceOf(app, redisPrefix)
  const agents: SeededMember[] = []
  for (const name of ['A', 'B', 'C']) {
    const m = await ws.addMember('agent', name)
    agents.push(m)
    await addToTeam(app, ws.admin, team.id, m.userId)
  }
  // Nobody online: five conversations wait; then everyone comes online and one pass takes them.
  const made = []
  for (let i = 0; i < 5; i++) made.push(await startConversation(app, await seedGuest(app, ws, `Guest ${i}`)))
  await app.deps.routing.sweep() // the creations' own passes are over (they found nobody online)
  for (const m of agents) await presence.online(ws.workspaceId, m.userId)
  await app.deps.routing.sweep()
  const byId = new Map((await app.deps.sql<{ id: string; agent: string }[]>`
    SELECT id, assigned_agent_id AS agent FROM conversations WHERE workspace_id = ${ws.workspaceId}`).map((r) => [r.id, r.agent]))
  const order = [...agents].sort((x, y) => (x.userId < y.userId ? -1 : 1)).map((m) => m.userId)
  t.same(made.map((c) => byId.get(c.id)), [order[0], order[1], order[2], order[0], order[1]], 'oldest first, each in turn (never assigned: by userId)')
  const stored = await app.deps.sql<{ userId: string }[]>`
    SELECT user_id AS "userId" FROM team_members WHERE team_id = ${team.id} ORDER BY last_assigned_at, user_id`
  t.same(stored.map((r) => r.userId), [order[2], order[0], order[1]], 'stored order: the last picked is newest')
  // The next conversation goes to the one whose last assignment is oldest.
  const next = await startConversation(app, await seedGuest(app, ws, 'Next'))
  await app.deps.routing.sweep()
  const [row] = await app.deps.sql<{ agent: string }[]>`SELECT assigned_agent_id AS agent FROM conversations WHERE id = ${next.id}`
  t.equal(row.agent, order[2])
})
