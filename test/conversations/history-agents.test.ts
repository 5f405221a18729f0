import type { LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { presenceKeys } from '../../src/presence.js'
import { build, seedGuest, seedWorkspace, redisOf } from '../helper.js'
import { BASE_US, insertConversations } from './seed.js'

type Page = { data: Record<string, any>[]; nextCursor: string | null }

t.test('GET /conversations/guest/:guestId/history', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const gina = await seedGuest(app, ws, 'Gina')
  const hugo = await seedGuest(app, ws, 'Hugo')
  const otto = await seedGuest(app, other, 'Otto')

  // Gina: three live conversations of any status (two created in the same millisecond), one deleted.
  const [c1, c2, c3, gone] = await insertConversations(app, ws, [
    { guestId: gina.guestId, createdAt: BASE_US + 1, status: 'RESOLVED' },
    { guestId: gina.guestId, createdAt: BASE_US + 2, pinned: true },
    { guestId: gina.guestId, createdAt: BASE_US + 3, status: 'CLOSED' },
    { guestId: gina.guestId, createdAt: BASE_US + 4, deletedAt: BASE_US },
  ])
  const [hugos] = await insertConversations(app, ws, [{ guestId: hugo.guestId }])
  await insertConversations(app, other, [{ guestId: otto.guestId }])
  const url = (guestId: string, q = '') => `/conversations/guest/${guestId}/history${q}`
  const ids = (res: { json(): unknown }) => (res.json() as Page).data.map((c) => c.id)

  t.test('a member sees the guest history newest first, any status, no deleted rows', async (t) => {
    const res = await app.inject({ url: url(gina.guestId), headers: ws.agent.headers })
    t.equal(res.statusCode, 200)
    t.same(ids(res), [c3!.id, c2!.id, c1!.id])
    t.notOk(ids(res).includes(gone!.id))
    t.equal(res.json().nextCursor, null)
    t.match(res.json().data[0], { guest: { id: gina.guestId, name: 'Gina' }, status: 'CLOSED' })
  })

  t.test('pages with cursors', async (t) => {
    const seen: string[] = []
    let cursor: string | null = null
    for (let i = 0; i < 5; i++) {
      const res: LightMyRequestResponse = await app.inject({ url: url(gina.guestId, `?limit=1${cursor ? `&cursor=${cursor}` : ''}`), headers: ws.agent.headers })
      t.equal(res.statusCode, 200)
      seen.push(...ids(res))
      cursor = res.json().nextCursor
      if (!cursor) break
    }
    t.same(seen, [c3!.id, c2!.id, c1!.id])
    // A cursor of one guest's history is not valid for another's.
    const first = await app.inject({ url: url(gina.guestId, '?limit=1'), headers: ws.agent.headers })
    const cross = await app.inject({ url: url(hugo.guestId, `?limit=1&cursor=${first.json().nextCursor}`), headers: ws.agent.headers })
    t.equal(cross.statusCode, 400)
    t.equal(cross.json().code, 'INVALID_CURSOR')
    const tampered = await app.inject({ url: url(gina.guestId, `?cursor=${first.json().nextCursor}x`), headers: ws.agent.headers })
    t.equal(tampered.json().code, 'INVALID_CURSOR')
  })

  t.test('the visitor of that guest sees it; another guest is 404', async (t) => {
    const own = await app.inject({ url: url(gina.guestId), headers: gina.headers })
    t.equal(own.statusCode, 200)
    t.same(ids(own), [c3!.id, c2!.id, c1!.id])
    const upper = await app.inject({ url: url(gina.guestId.toUpperCase()), headers: gina.headers })
    t.equal(upper.statusCode, 200, 'an upper-case spelling of the same id')
    const foreign = await app.inject({ url: url(gina.guestId), headers: hugo.headers })
    t.equal(foreign.statusCode, 404)
    t.equal(foreign.json().code, 'GUEST_NOT_FOUND')
    t.notOk(foreign.body.includes(c1!.id))
    const hugoOwn = await app.inject({ url: url(hugo.guestId), headers: hugo.headers })
    t.same(ids(hugoOwn), [hugos!.id])
    // A visitor of another workspace.
    const otherWs = await app.inject({ url: url(gina.guestId), headers: otto.headers })
    t.equal(otherWs.statusCode, 404)
  })

  t.test('unknown, malformed and other-workspace guests are 404; bad queries 400', async (t) => {
    const crossTenant = await app.inject({ url: url(otto.guestId), headers: ws.agent.headers })
    t.equal(crossTenant.statusCode, 404)
    t.equal(crossTenant.json().code, 'GUEST_NOT_FOUND')
    for (const id of ['00000000-0000-7000-8000-000000000000', 'not-a-uuid', 'x'.repeat(300), "1' OR '1'='1", '%00']) {
      const res = await app.inject({ url: url(encodeURIComponent(id)), headers: ws.agent.headers })
      t.equal(res.statusCode, 404, id)
    }
    for (const [q, field] of [
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?sortBy=createdAt', 'sortBy'],
    ]) {
      const res = await app.inject({ url: url(gina.guestId, q), headers: ws.agent.headers })
      t.equal(res.statusCode, 400, q)
      t.match(res.json().message, field!)
    }
    t.equal((await app.inject({ url: url(gina.guestId) })).statusCode, 401)
    t.equal((await app.inject({ url: url(gina.guestId), headers: { 'x-visitor-session': 'forged' } })).statusCode, 401)
  })
})

t.test('GET /conversations/available-agents', async (t) => {
  const { app, redisPrefix } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const bea = await ws.addMember('agent', 'Bea Busy')
  const dan = await ws.addMember('agent', 'Dan Disabled')
  await app.deps.sql`UPDATE members SET status = 'disabled' WHERE workspace_id = ${ws.workspaceId} AND user_id = ${dan.userId}`

  // Open assignments: Bea 3, Agnes 1, Adam 2 (+ rows that must not count: resolved, deleted, other tenant).
  await insertConversations(app, ws, [
    { assignedAgentId: bea.userId },
    { assignedAgentId: bea.userId },
    { assignedAgentId: bea.userId, pinned: true },
    { assignedAgentId: ws.agent.userId },
    { assignedAgentId: ws.admin.userId },
    { assignedAgentId: ws.admin.userId },
    { assignedAgentId: ws.agent.userId, status: 'RESOLVED' },
    { assignedAgentId: ws.agent.userId, deletedAt: BASE_US },
    { assignedAgentId: dan.userId },
    {},
  ])
  await insertConversations(app, other, [{ assignedAgentId: ws.owner.userId }, { assignedAgentId: ws.owner.userId }])

  const online = async (userId: string) =>
    redisOf(app).zadd(presenceKeys.sockets(redisPrefix, ws.workspaceId, userId), Date.now() + 60_000, `gw1:${userId}`)

  t.test('everyone offline: fewest open assigned first; disabled members left out', async (t) => {
    const res = await app.inject({ url: '/conversations/available-agents', headers: ws.agent.headers })
    t.equal(res.statusCode, 200)
    t.same(res.json().data, [
      { userId: ws.owner.userId, name: 'Olivia Owner', presence: 'offline', openAssigned: 0 },
      { userId: ws.agent.userId, name: 'Agnes Agent', presence: 'offline', openAssigned: 1 },
      { userId: ws.admin.userId, name: 'Adam Admin', presence: 'offline', openAssigned: 2 },
      { userId: bea.userId, name: 'Bea Busy', presence: 'offline', openAssigned: 3 },
    ])
  })

  t.test('online first, then away, then offline', async (t) => {
    await online(bea.userId)
    await online(ws.admin.userId)
    await online(ws.owner.userId)
    await redisOf(app).hset(presenceKeys.away(redisPrefix, ws.workspaceId), ws.owner.userId, '1')
    // An expired socket does not make Agnes online.
    await redisOf(app).zadd(presenceKeys.sockets(redisPrefix, ws.workspaceId, ws.agent.userId), Date.now() - 1000, 'gw-dead:1')
    const res = await app.inject({ url: '/conversations/available-agents', headers: ws.agent.headers })
    t.same(
      res.json().data.map((a: any) => [a.name, a.presence, a.openAssigned]),
      [
        ['Adam Admin', 'online', 2],
        ['Bea Busy', 'online', 3],
        ['Olivia Owner', 'away', 0],
        ['Agnes Agent', 'offline', 1],
      ],
    )
  })

  t.test('every role holds conversations:assign; others are refused', async (t) => {
    for (const m of [ws.owner, ws.admin, ws.agent]) {
      t.equal((await app.inject({ url: '/conversations/available-agents', headers: m.headers })).statusCode, 200, m.role)
    }
    t.equal((await app.inject({ url: '/conversations/available-agents' })).statusCode, 401)
    const guest = await seedGuest(app, ws)
    t.equal((await app.inject({ url: '/conversations/available-agents', headers: guest.headers })).statusCode, 401)
    const disabled = await app.inject({ url: '/conversations/available-agents', headers: dan.headers })
    t.equal(disabled.statusCode, 403)
    const outsider = await app.inject({ url: '/conversations/available-agents', headers: { ...ws.agent.headers, 'x-workspace-id': other.workspaceId } })
    t.equal(outsider.statusCode, 403)
    t.equal(outsider.json().code, 'NOT_A_MEMBER')
    // The other workspace sees its own members only, with its own counts.
    const theirs = await app.inject({ url: '/conversations/available-agents', headers: other.agent.headers })
    t.same(theirs.json().data.map((a: any) => a.openAssigned), [0, 0, 0])
    t.notOk(theirs.body.includes(bea.userId))
  })
})

t.test('available-agents still answers when presence cannot be read (everyone offline)', async (t) => {
  const { app, redisPrefix } = await build(t, { captureLogs: true })
  const ws = await seedWorkspace(app)
  await redisOf(app).zadd(presenceKeys.sockets(redisPrefix, ws.workspaceId, ws.agent.userId), Date.now() + 60_000, 'gw1:s')
  const before = await app.inject({ url: '/conversations/available-agents', headers: ws.agent.headers })
  t.equal(before.json().data[0].presence, 'online')
  // Redis gone: with no offline queue, commands fail at once.
  const ended = new Promise((r) => redisOf(app).once('end', r))
  redisOf(app).disconnect(false)
  await ended
  t.equal(redisOf(app).status, 'end', 'redis is down for the next request')
  const res = await app.inject({ url: '/conversations/available-agents', headers: ws.agent.headers })
  t.equal(res.statusCode, 200)
  t.same(res.json().data.map((a: any) => a.presence), ['offline', 'offline', 'offline'])
  // Back up, so the app closes cleanly.
  await redisOf(app).connect()
  t.equal(redisOf(app).status, 'ready')
})
