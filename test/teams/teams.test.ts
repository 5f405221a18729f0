import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents, patch, startConversation } from '../conversations/fixtures.js'
import { addToTeam, createTeam, setDefaultTeam } from './fixtures.js'

/** /teams (API.md section 16): the routes, their errors, a channel's default team, a conversation's team. */
t.test('teams: create, read, update, delete, members, errors', async (t) => {
  const { app } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')

  const team = await createTeam(app, ws.admin, { name: 'Billing', description: 'money', assignment: 'round_robin', capacity: 3 })
  t.match(team, { name: 'Billing', description: 'money', assignment: 'round_robin', capacity: 3, private: false, members: [] })
  const dflt = await createTeam(app, ws.owner, { name: 'Sales' })
  t.match(dflt, { assignment: 'manual', capacity: null, private: false, description: null })

  const dup = await app.inject({ method: 'POST', url: '/teams', headers: ws.owner.headers, payload: { name: 'bILLING' } })
  t.equal(dup.statusCode, 409)
  t.equal(dup.json().code, 'TEAM_NAME_TAKEN', 'names are unique case-insensitively')
  const agentCreate = await app.inject({ method: 'POST', url: '/teams', headers: ws.agent.headers, payload: { name: 'X' } })
  t.equal(agentCreate.statusCode, 403, 'agents may not manage teams')
  const bad = await app.inject({ method: 'POST', url: '/teams', headers: ws.owner.headers, payload: { name: '', capacity: 0 } })
  t.equal(bad.statusCode, 400)

  const list = await app.inject({ method: 'GET', url: '/teams', headers: ws.agent.headers })
  t.same(list.json().data.map((x: { name: string }) => x.name), ['Billing', 'Sales'], 'every member reads teams, by name')
  t.equal((await app.inject({ method: 'GET', url: `/teams/${team.id}`, headers: other.owner.headers })).statusCode, 404, 'another workspace: 404')
  t.equal((await app.inject({ method: 'GET', url: '/teams/not-a-uuid', headers: ws.owner.headers })).statusCode, 404)

  const withMember = await addToTeam(app, ws.admin, team.id, ws.agent.userId, 2)
  t.same(withMember.members, [{ userId: ws.agent.userId, name: ws.agent.name, capacity: 2 }])
  const updated = await addToTeam(app, ws.admin, team.id, ws.agent.userId, null)
  t.same(updated.members, [{ userId: ws.agent.userId, name: ws.agent.name, capacity: null }], 'adding twice updates')
  const stranger = await app.inject({ method: 'PUT', url: `/teams/${team.id}/members/${encodeURIComponent(other.agent.userId)}`, headers: ws.admin.headers, payload: {} })
  t.equal(stranger.statusCode, 400)
  t.equal(stranger.json().code, 'INVALID_AGENT')

  const renamed = await app.inject({ method: 'PATCH', url: `/teams/${team.id}`, headers: ws.admin.headers, payload: { name: 'Sales' } })
  t.equal(renamed.json().code, 'TEAM_NAME_TAKEN')
  const patched = await app.inject({ method: 'PATCH', url: `/teams/${team.id}`, headers: ws.admin.headers, payload: { capacity: 5, private: true } })
  t.match(patched.json(), { name: 'Billing', capacity: 5, private: true })

  // The 201st team of a workspace is refused.
  await app.deps.sql`
    INSERT INTO teams (id, workspace_id, name) SELECT gen_random_uuid(), ${ws.workspaceId}, 'bulk ' || i FROM generate_series(1, 198) i`
  const tooMany = await app.inject({ method: 'POST', url: '/teams', headers: ws.owner.headers, payload: { name: 'one more' } })
  t.equal(tooMany.statusCode, 409)
  t.equal(tooMany.json().code, 'TOO_MANY_TEAMS')

  const del = await app.inject({ method: 'DELETE', url: `/teams/${dflt.id}`, headers: ws.owner.headers })
  t.equal(del.statusCode, 204)
  t.equal((await app.inject({ method: 'DELETE', url: `/teams/${dflt.id}`, headers: ws.owner.headers })).statusCode, 404)
})

t.test("a channel's default team, a conversation's team, the queue and history reasons", async (t) => {
  const { app, redisPrefix } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const auto = await createTeam(app, ws.owner, { name: 'Support', assignment: 'balanced' })
  const manual = await createTeam(app, ws.owner, { name: 'Manual' })
  const foreign = await createTeam(app, other.owner, { name: 'Theirs' })

  const badDefault = await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { defaultTeamId: foreign.id } })
  t.equal(badDefault.statusCode, 400)
  t.equal(badDefault.json().code, 'INVALID_TEAM')
  const channel = await setDefaultTeam(app, ws, auto.id)
  t.equal(channel.defaultTeamId, auto.id)

  const guest = await seedGuest(app, ws)
  const c1 = await startConversation(app, guest)
  t.equal(c1.teamId, auto.id)
  t.same(c1.team, { id: auto.id, name: 'Support' })
  t.ok(c1.queuedAt, 'queued: nobody is online')
  t.same(c1.queue, { position: 1, estimatedWaitSeconds: null }, 'the visitor sees its place')
  const c2 = await startConversation(app, guest)
  const seen = await app.inject({ method: 'GET', url: `/conversations/${c2.id}`, headers: guest.headers })
  t.same(seen.json().queue, { position: 2, estimatedWaitSeconds: null })

  const queue = await app.inject({ method: 'GET', url: `/teams/${auto.id}/queue`, headers: ws.agent.headers })
  t.same(queue.json().data.map((q: { conversationId: string; position: number }) => [q.conversationId, q.position]), [[c1.id, 1], [c2.id, 2]])

  // A manual assignment takes it out of the queue (reason MANUAL, byUserId set).
  const assigned = await patch(app, ws.admin.headers, c1.id, 'assign-agent', { agentId: ws.agent.userId })
  t.equal(assigned.json().queuedAt, null)
  const q2 = await app.inject({ method: 'GET', url: `/teams/${auto.id}/queue`, headers: ws.agent.headers })
  t.same(q2.json().data.map((q: { conversationId: string; position: number }) => [q.conversationId, q.position]), [[c2.id, 1]], 'the next moves up')
  const moved = await events.waitFor(
    (e) => e.event === 'conversation:updated' && e.payload.conversation.id === c2.id && e.payload.conversation.queue?.position === 1,
  )
  t.same(moved.rooms, [`guest:${guest.guestId}`], "the visitor hears of its new place, in its own room only")

  // Moving to a team the assignee is not in unassigns it (TEAM_CHANGED); a manual team queues nothing.
  const bad = await patch(app, ws.admin.headers, c1.id, 'team', { teamId: foreign.id })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'INVALID_TEAM')
  const toManual = await patch(app, ws.admin.headers, c1.id, 'team', { teamId: manual.id })
  t.match(toManual.json(), { teamId: manual.id, assignedAgentId: null, queuedAt: null })
  // Back into the auto team, unassigned: queued again; unassign of an auto team's conversation queues.
  const back = await patch(app, ws.admin.headers, c1.id, 'team', { teamId: auto.id })
  t.ok(back.json().queuedAt)
  await patch(app, ws.admin.headers, c1.id, 'assign-agent', { agentId: ws.agent.userId })
  const unassigned = await patch(app, ws.admin.headers, c1.id, 'unassign-agent')
  t.ok(unassigned.json().queuedAt, 'unassigning queues it again')
  const history = await app.inject({ method: 'GET', url: `/conversations/${c1.id}/assignment-history`, headers: ws.agent.headers })
  t.same(
    history.json().data.map((h: { action: string; reason: string; byUserId: string | null }) => [h.action, h.reason, h.byUserId]),
    [
      ['UNASSIGNED', 'MANUAL', ws.admin.userId],
      ['ASSIGNED', 'MANUAL', ws.admin.userId],
      ['UNASSIGNED', 'TEAM_CHANGED', ws.admin.userId],
      ['ASSIGNED', 'MANUAL', ws.admin.userId],
    ],
  )

  // Lists filter by team (and `none`).
  const none = await app.inject({ method: 'GET', url: '/conversations?teamId=none', headers: ws.agent.headers })
  t.same(none.json().data, [])
  const byTeam = await app.inject({ method: 'GET', url: `/conversations?teamId=${auto.id}`, headers: ws.agent.headers })
  t.same(byTeam.json().data.map((c: { id: string }) => c.id).sort(), [c1.id, c2.id].sort())

  // Closing leaves the queue; deleting the team keeps assignees and clears the team.
  const closed = await patch(app, ws.admin.headers, c2.id, 'close')
  t.equal(closed.json().queuedAt, null)
  await patch(app, ws.admin.headers, c2.id, 'assign-agent', { agentId: ws.agent.userId })
  t.equal((await app.inject({ method: 'DELETE', url: `/teams/${auto.id}`, headers: ws.owner.headers })).statusCode, 204)
  const after = await app.inject({ method: 'GET', url: `/conversations/${c2.id}`, headers: ws.agent.headers })
  t.match(after.json(), { teamId: null, team: null, queuedAt: null, assignedAgentId: ws.agent.userId })
  const after1 = await app.inject({ method: 'GET', url: `/conversations/${c1.id}`, headers: ws.agent.headers })
  t.match(after1.json(), { teamId: null, queuedAt: null })
  const reconcile = await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.owner.headers })
  t.equal(reconcile.json().corrected, false, 'the counters (team scopes included) never drift')
})
