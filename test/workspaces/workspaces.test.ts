import t from 'tap'
import { build, memberToken, seedWorkspace } from '../helper.js'

t.test('POST /workspaces makes the caller its owner', async (t) => {
  const { app } = await build(t)
  const token = await memberToken('auth0|64f0c2', { name: 'Wendy Founder', email: 'wendy@example.test' })
  const headers = { authorization: `Bearer ${token}` }
  const res = await app.inject({ method: 'POST', url: '/workspaces', headers, payload: { name: 'Wendy Co' } })
  t.equal(res.statusCode, 201)
  const ws = res.json()
  t.same(Object.keys(ws).sort(), ['createdAt', 'id', 'name'])
  t.match(ws, { name: 'Wendy Co', id: /^[0-9a-f-]{36}$/, createdAt: /Z$/ })
  const ownerOf = async (workspaceId: string) =>
    (await app.deps.sql`SELECT user_id AS "userId", role, status, name, email FROM members WHERE workspace_id = ${workspaceId}`)[0]
  const owner = await ownerOf(ws.id)
  t.match(owner, { userId: 'auth0|64f0c2', role: 'owner', status: 'active', name: 'Wendy Founder', email: 'wendy@example.test' })

  // The new owner can use it straight away, with x-workspace-id.
  const members = await app.inject({ method: 'GET', url: '/auth/members', headers: { ...headers, 'x-workspace-id': ws.id } })
  t.equal(members.statusCode, 200)
  t.equal(members.json().total, 1)

  const named = await app.inject({ method: 'POST', url: '/workspaces', headers, payload: { name: 'Second', ownerName: 'W. F.', ownerEmail: 'wf@example.test' } })
  t.equal(named.statusCode, 201)
  const o2 = await ownerOf(named.json().id)
  t.match(o2, { name: 'W. F.', email: 'wf@example.test' })

  // A token with no name claim: the member still gets a usable name.
  const bare = { authorization: `Bearer ${await memberToken('bare-sub')}` }
  const b = await app.inject({ method: 'POST', url: '/workspaces', headers: bare, payload: { name: 'Bare' } })
  t.equal(b.statusCode, 201)
  const o3 = await ownerOf(b.json().id)
  t.match(o3, { name: 'bare-sub', email: '' })
})

t.test('POST /workspaces: bad input and credentials', async (t) => {
  const { app } = await build(t)
  const headers = { authorization: `Bearer ${await memberToken('idp|x')}` }
  for (const [payload, message] of [
    [{}, /missing field 'name'/],
    [{ name: '' }, /name/],
    [{ name: 'x'.repeat(201) }, /name/],
    [{ name: 'W', ownerEmail: 'nope' }, /ownerEmail/],
    [{ name: 'W', id: '00000000-0000-0000-0000-000000000000' }, /unknown field 'id'/],
    [{ name: 'W', role: 'agent' }, /unknown field 'role'/],
  ] as const) {
    const res = await app.inject({ method: 'POST', url: '/workspaces', headers, payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(res.json(), { code: 'VALIDATION_ERROR', message })
  }
  const malformed = await app.inject({ method: 'POST', url: '/workspaces', headers: { ...headers, 'content-type': 'application/json' }, payload: '{"name":' })
  t.same([malformed.statusCode, malformed.json().code], [400, 'INVALID_JSON'])
  t.equal((await app.inject({ method: 'POST', url: '/workspaces', payload: { name: 'W' } })).statusCode, 401)
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM workspaces`
  t.equal(n, 0, 'nothing written')
})

t.test('GET /workspaces lists active memberships only', async (t) => {
  const { app } = await build(t)
  const a = await seedWorkspace(app, 'A')
  const b = await seedWorkspace(app, 'B')
  await seedWorkspace(app, 'C')
  // a.agent is also an admin of B, and a disabled agent of a third workspace.
  await app.deps.sql`INSERT INTO members (workspace_id, user_id, name, email, role) VALUES (${b.workspaceId}, ${a.agent.userId}, 'x', '', 'admin')`
  const d = await seedWorkspace(app, 'D')
  await app.deps.sql`
    INSERT INTO members (workspace_id, user_id, name, email, role, status) VALUES (${d.workspaceId}, ${a.agent.userId}, 'x', '', 'agent', 'disabled')`
  const res = await app.inject({ method: 'GET', url: '/workspaces', headers: { authorization: `Bearer ${a.agent.token}` } })
  t.equal(res.statusCode, 200)
  t.same(
    res.json().data.map((w: { name: string; role: string }) => [w.name, w.role]),
    [
      ['A', 'agent'],
      ['B', 'admin'],
    ],
  )
  t.same(Object.keys(res.json().data[0]).sort(), ['createdAt', 'id', 'name', 'role'])
  // x-workspace-id is not needed and does not matter here.
  const withHeader = await app.inject({ method: 'GET', url: '/workspaces', headers: a.agent.headers })
  t.equal(withHeader.json().data.length, 2)
  const none = await app.inject({ method: 'GET', url: '/workspaces', headers: { authorization: `Bearer ${await memberToken('idp|new')}` } })
  t.same(none.json(), { data: [] })
  t.equal((await app.inject({ method: 'GET', url: '/workspaces' })).statusCode, 401)
})
