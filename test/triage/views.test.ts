import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { randomUUID } from 'node:crypto'
import { patch, startConversation } from '../conversations/fixtures.js'
import { createTeam } from '../teams/fixtures.js'

/** Saved views (API.md section 17): scope rules, caps, and the view's list. */

t.test('views: who sees and manages which, the list they give, deleted labels match nothing', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const guest = await seedGuest(app, ws)
  const label = (await app.inject({ method: 'POST', url: '/labels', headers: ws.admin.headers, payload: { name: 'vip', color: '#123456' } })).json()
  const [c1, c2, c3] = [await startConversation(app, guest), await startConversation(app, guest), await startConversation(app, guest)]
  await app.inject({ method: 'PUT', url: `/conversations/${c1.id}/labels`, headers: ws.agent.headers, payload: { labelIds: [label.id] } })
  await app.inject({ method: 'PUT', url: `/conversations/${c2.id}/labels`, headers: ws.agent.headers, payload: { labelIds: [label.id] } })
  await app.inject({ method: 'PATCH', url: `/conversations/${c2.id}/pending`, headers: ws.agent.headers })
  await app.inject({ method: 'PATCH', url: `/conversations/${c3.id}/assign-agent`, headers: ws.agent.headers, payload: { agentId: ws.agent.userId } })

  const post = (headers: Record<string, string>, payload: object) => app.inject({ method: 'POST', url: '/views', headers, payload })
  const mine = await post(ws.agent.headers, { name: 'Mine', filters: { assignee: 'me' } })
  t.equal(mine.statusCode, 201, mine.body)
  t.match(mine.json(), { name: 'Mine', scope: 'personal', ownerId: ws.agent.userId, sortBy: 'lastMessageAt', sortOrder: 'desc', filters: { assignee: 'me' } })
  const denied = await post(ws.agent.headers, { name: 'Team', scope: 'workspace', filters: {} })
  t.equal(denied.statusCode, 403, 'a workspace view needs labels:manage')
  const vip = await post(ws.admin.headers, { name: 'VIP waiting', scope: 'workspace', filters: { labelIds: [label.id], status: 'active' }, sortBy: 'priority' })
  t.equal(vip.statusCode, 201)
  const adminsOwn = await post(ws.admin.headers, { name: 'Admin only', filters: {} })
  t.equal((await post(ws.admin.headers, { name: 'x', filters: { labelIds: [randomUUID()] } })).json().code, 'INVALID_LABEL')
  t.equal((await post(ws.admin.headers, { name: 'x', filters: { bogus: true } })).statusCode, 400)
  t.equal((await post(ws.admin.headers, { name: 'x', filters: { status: 'resolved' } })).statusCode, 400)

  const list = (await app.inject({ method: 'GET', url: '/views', headers: ws.agent.headers })).json().data
  t.same(list.map((v: { name: string }) => v.name), ['Mine', 'VIP waiting'], "the agent sees its own and the workspace's, not the admin's personal one")
  t.same((await app.inject({ method: 'GET', url: '/views', headers: other.admin.headers })).json().data, [])
  const read = (headers: Record<string, string>, id: string) => app.inject({ method: 'GET', url: `/views/${id}/conversations`, headers })
  t.equal((await read(ws.agent.headers, adminsOwn.json().id)).statusCode, 404)
  t.equal((await read(other.admin.headers, vip.json().id)).statusCode, 404)

  const ids = async (headers: Record<string, string>, id: string) => (await read(headers, id)).json().data.map((c: { id: string }) => c.id).sort()
  t.same(await ids(ws.agent.headers, mine.json().id), [c3.id], 'assignee me is the reader')
  t.same(await ids(ws.agent.headers, vip.json().id), [c1.id, c2.id].sort(), 'labels, active statuses')

  // Managing: the agent may not change the workspace view; the admin may not touch the agent's personal one.
  t.equal((await app.inject({ method: 'PATCH', url: `/views/${vip.json().id}`, headers: ws.agent.headers, payload: { name: 'no' } })).statusCode, 403)
  t.equal((await app.inject({ method: 'PATCH', url: `/views/${mine.json().id}`, headers: ws.admin.headers, payload: { name: 'no' } })).statusCode, 404)
  const renamed = await app.inject({ method: 'PATCH', url: `/views/${mine.json().id}`, headers: ws.agent.headers, payload: { name: 'Assigned to me', filters: { assignee: 'me', status: 'active' } } })
  t.match(renamed.json(), { name: 'Assigned to me', filters: { assignee: 'me', status: 'active' } })

  // Paged, with a cursor bound to the view's parameters.
  const p1 = (await app.inject({ method: 'GET', url: `/views/${vip.json().id}/conversations?limit=1`, headers: ws.agent.headers })).json()
  t.equal(p1.data.length, 1)
  const p2 = (await app.inject({ method: 'GET', url: `/views/${vip.json().id}/conversations?limit=1&cursor=${p1.nextCursor}`, headers: ws.agent.headers })).json()
  t.equal(p2.data.length, 1)
  t.not(p2.data[0].id, p1.data[0].id)
  t.equal((await app.inject({ method: 'GET', url: `/views/${mine.json().id}/conversations?cursor=${p1.nextCursor}`, headers: ws.agent.headers })).json().code, 'INVALID_CURSOR')

  // The label goes: the view matches nothing for it.
  await app.inject({ method: 'DELETE', url: `/labels/${label.id}`, headers: ws.admin.headers })
  t.same(await ids(ws.agent.headers, vip.json().id), [])

  t.equal((await app.inject({ method: 'DELETE', url: `/views/${vip.json().id}`, headers: ws.agent.headers })).statusCode, 403)
  t.equal((await app.inject({ method: 'DELETE', url: `/views/${vip.json().id}`, headers: ws.owner.headers })).statusCode, 204)
  t.equal((await app.inject({ method: 'DELETE', url: `/views/${vip.json().id}`, headers: ws.owner.headers })).statusCode, 404)
})

t.test('at most 100 personal views per member and 100 workspace views per workspace', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  await app.deps.sql`
    INSERT INTO views (id, workspace_id, scope, owner_id, name, sort_by, sort_order)
    SELECT gen_random_uuid(), ${ws.workspaceId}, 'personal', ${ws.agent.userId}, 'v' || i, 'lastMessageAt', 'desc' FROM generate_series(1, 99) i`
  await app.deps.sql`
    INSERT INTO views (id, workspace_id, scope, owner_id, name, sort_by, sort_order)
    SELECT gen_random_uuid(), ${ws.workspaceId}, 'workspace', ${ws.admin.userId}, 'w' || i, 'lastMessageAt', 'desc' FROM generate_series(1, 100) i`
  const post = (headers: Record<string, string>, payload: object) => app.inject({ method: 'POST', url: '/views', headers, payload })
  const two = await Promise.all([post(ws.agent.headers, { name: 'a' }), post(ws.agent.headers, { name: 'b' })])
  t.same(two.map((r) => r.statusCode).sort(), [201, 409], 'the 101st personal view, even concurrently')
  t.equal(two.find((r) => r.statusCode === 409)!.json().code, 'TOO_MANY_VIEWS')
  t.equal((await post(ws.admin.headers, { name: 'w', scope: 'workspace' })).statusCode, 409, 'the 101st workspace view')
  t.equal((await post(ws.admin.headers, { name: 'mine' })).statusCode, 201, "the admin's own personal views count apart")
})

t.test("views: teamId (a team or none) checked when written, applied when listed, a deleted team matches nothing", async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const sales = await createTeam(app, ws.owner, { name: 'Sales' })
  const support = await createTeam(app, ws.owner, { name: 'Support' })
  const theirs = await createTeam(app, other.owner, { name: 'Theirs' })
  const guest = await seedGuest(app, ws)
  const [s1, s2, p1, none] = [await startConversation(app, guest), await startConversation(app, guest), await startConversation(app, guest), await startConversation(app, guest)]
  for (const c of [s1, s2]) await patch(app, ws.admin.headers, c.id, 'team', { teamId: sales.id })
  await patch(app, ws.admin.headers, p1.id, 'team', { teamId: support.id })
  await patch(app, ws.admin.headers, s2.id, 'pending')

  const post = (payload: object) => app.inject({ method: 'POST', url: '/views', headers: ws.agent.headers, payload })
  const ids = async (id: string) =>
    (await app.inject({ method: 'GET', url: `/views/${id}/conversations`, headers: ws.agent.headers })).json().data.map((c: { id: string }) => c.id).sort()

  const salesView = await post({ name: 'Sales', filters: { teamId: sales.id.toUpperCase() } })
  t.equal(salesView.statusCode, 201, salesView.body)
  t.same(salesView.json().filters, { teamId: sales.id }, 'stored as the team id')
  t.same(await ids(salesView.json().id), [s1.id], "the team's OPEN conversations")
  const salesActive = await post({ name: 'Sales, all', filters: { teamId: sales.id, status: 'active' } })
  t.same(await ids(salesActive.json().id), [s1.id, s2.id].sort(), 'with the other filters')
  const noTeam = await post({ name: 'No team', filters: { teamId: 'none' } })
  t.equal(noTeam.statusCode, 201)
  t.same(await ids(noTeam.json().id), [none.id], 'none: conversations of no team')

  for (const [teamId, code] of [
    [randomUUID(), 'INVALID_TEAM'],
    [theirs.id, 'INVALID_TEAM'],
    ['sales', 'VALIDATION_ERROR'],
    [null, 'VALIDATION_ERROR'],
  ] as const) {
    const res = await post({ name: 'bad', filters: { teamId } })
    t.equal(res.statusCode, 400, String(teamId))
    t.equal(res.json().code, code)
  }
  const patched = await app.inject({ method: 'PATCH', url: `/views/${noTeam.json().id}`, headers: ws.agent.headers, payload: { filters: { teamId: theirs.id } } })
  t.equal(patched.json().code, 'INVALID_TEAM', 'PATCH checks it too')
  const moved = await app.inject({ method: 'PATCH', url: `/views/${noTeam.json().id}`, headers: ws.agent.headers, payload: { filters: { teamId: support.id } } })
  t.equal(moved.statusCode, 200)
  t.same(await ids(noTeam.json().id), [p1.id])

  // The team goes: its conversations get no team; the view naming it matches nothing.
  t.equal((await app.inject({ method: 'DELETE', url: `/teams/${sales.id}`, headers: ws.owner.headers })).statusCode, 204)
  t.same(await ids(salesView.json().id), [])
})
