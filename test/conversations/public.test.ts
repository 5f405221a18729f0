import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { BASE_US, insertConversations } from './seed.js'

t.test('public conversation status routes', async (t) => {
  const { app } = await build(t, { env: { PUBLIC_RATE_LIMIT_PER_MIN: '1000' } })
  const ws = await seedWorkspace(app)
  await app.deps.sql`UPDATE members SET avatar_url = 'https://cdn.example/agnes.png'
    WHERE workspace_id = ${ws.workspaceId} AND user_id = ${ws.agent.userId}`
  const gone = await ws.addMember('agent', 'Gone Member')
  const [open, assigned, resolved, deleted, orphan] = await insertConversations(app, ws, [
    { createdAt: BASE_US, lastMessageAt: BASE_US + 5_000_000 },
    { assignedAgentId: ws.agent.userId, lastMessagePreview: 'my card number is 4242' },
    { status: 'RESOLVED', assignedAgentId: ws.admin.userId, closedAt: BASE_US },
    { deletedAt: BASE_US, assignedAgentId: ws.agent.userId },
    { assignedAgentId: gone.userId },
  ])
  await app.deps.sql`DELETE FROM members WHERE workspace_id = ${ws.workspaceId} AND user_id = ${gone.userId}`
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ url, headers })

  t.test('status', async (t) => {
    const res = await get(`/api/public/conversations/${open!.id}/status`)
    t.equal(res.statusCode, 200)
    t.same(res.json(), { id: open!.id, deleted: false, status: 'OPEN' })
    t.same((await get(`/api/public/conversations/${resolved!.id}/status`)).json(), { id: resolved!.id, deleted: false, status: 'RESOLVED' })
    t.same((await get(`/api/public/conversations/${deleted!.id}/status`)).json(), { id: deleted!.id, deleted: true, status: 'OPEN' })
  })

  t.test('agent: name and avatar only', async (t) => {
    const res = await get(`/api/public/conversations/${assigned!.id}/agent`)
    t.equal(res.statusCode, 200)
    t.same(res.json(), { agent: { name: 'Agnes Agent', avatarUrl: 'https://cdn.example/agnes.png' } })
    t.notOk(res.body.includes(ws.agent.userId), 'no member id')
    t.notOk(res.body.includes(ws.agent.email), 'no e-mail')
    t.same((await get(`/api/public/conversations/${resolved!.id}/agent`)).json(), { agent: { name: 'Adam Admin', avatarUrl: null } })
    t.same((await get(`/api/public/conversations/${open!.id}/agent`)).json(), { agent: null })
    t.same((await get(`/api/public/conversations/${deleted!.id}/agent`)).json(), { agent: null }, 'deleted: nobody')
    t.same((await get(`/api/public/conversations/${orphan!.id}/agent`)).json(), { agent: null }, 'member removed since')
  })

  t.test('meta', async (t) => {
    const res = await get(`/api/public/conversations/${open!.id}/meta`)
    t.equal(res.statusCode, 200)
    t.same(res.json(), {
      id: open!.id,
      status: 'OPEN',
      assigned: false,
      createdAt: '2026-11-21T10:00:00.000Z',
      lastMessageAt: '2026-11-21T10:00:05.000Z',
      deleted: false,
    })
    const a = (await get(`/api/public/conversations/${assigned!.id}/meta`)).json()
    t.equal(a.assigned, true)
    t.same(Object.keys(a).sort(), ['assigned', 'createdAt', 'deleted', 'id', 'lastMessageAt', 'status'])
    for (const leak of [ws.workspaceId, ws.agent.userId, 'card number', ws.channelId]) {
      t.notOk(JSON.stringify(a).includes(leak), `meta does not carry ${leak}`)
    }
    t.equal((await get(`/api/public/conversations/${deleted!.id}/meta`)).json().deleted, true)
  })

  t.test('unknown and malformed ids are 404, never 500', async (t) => {
    const ids = ['01900000-0000-7000-8000-000000000000', 'nope', '12345', "x' OR '1'='1", '%27%3B--', 'a'.repeat(90), 'b'.repeat(300), `${open!.id}x`]
    for (const id of ids) {
      for (const what of ['status', 'agent', 'meta']) {
        const res = await get(`/api/public/conversations/${id}/${what}`)
        t.equal(res.statusCode, 404, `${what} ${id}`)
        t.equal(res.json().code, 'CONVERSATION_NOT_FOUND')
      }
    }
    t.equal((await get(`/api/public/conversations/${open!.id.toUpperCase()}/status`)).statusCode, 200, 'case does not matter')
  })

  t.test('any origin may call them (CORS), no credentials needed', async (t) => {
    const res = await get(`/api/public/conversations/${open!.id}/status`, { origin: 'https://shop.customer.example' })
    t.equal(res.statusCode, 200)
    t.ok(res.headers['access-control-allow-origin'], 'allow-origin set for a foreign origin')
    const pre = await app.inject({
      method: 'OPTIONS',
      url: `/api/public/conversations/${open!.id}/meta`,
      headers: { origin: 'https://shop.customer.example', 'access-control-request-method': 'GET' },
    })
    t.ok(pre.statusCode < 300)
    t.ok(pre.headers['access-control-allow-origin'])
  })
})

t.test('public routes share one rate limit per client address', async (t) => {
  const { app } = await build(t, { env: { PUBLIC_RATE_LIMIT_PER_MIN: '4' } })
  const ws = await seedWorkspace(app)
  const [c] = await insertConversations(app, ws, [{}])
  const from = (remoteAddress: string, what: string) => app.inject({ url: `/api/public/conversations/${c!.id}/${what}`, remoteAddress })
  const codes: number[] = []
  for (const what of ['status', 'agent', 'meta', 'status']) codes.push((await from('10.9.9.1', what)).statusCode)
  t.same(codes, [200, 200, 200, 200])
  const limited = await from('10.9.9.1', 'meta')
  t.equal(limited.statusCode, 429)
  t.equal(limited.json().code, 'RATE_LIMITED')
  t.match(limited.json(), { statusCode: 429, error: 'Too Many Requests' })
  t.ok(Number(limited.headers['retry-after']) >= 1, 'Retry-After in seconds')
  // Malformed ids are limited too (no free probing).
  const probe = await app.inject({ url: '/api/public/conversations/not-a-uuid/status', remoteAddress: '10.9.9.1' })
  t.equal(probe.statusCode, 429)
  t.equal((await from('10.9.9.2', 'status')).statusCode, 200, 'another address has its own budget')
  const bad = await app.inject({ url: '/api/public/conversations/not-a-uuid/status', remoteAddress: '10.9.9.3' })
  t.equal(bad.statusCode, 404)
})
