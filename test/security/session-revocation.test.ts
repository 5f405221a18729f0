import type { InjectOptions } from 'fastify'
import t from 'tap'
import { build, seedWorkspace } from '../helper.js'
import { connect, refusal, startGateway, testDatabaseAndPrefix } from '../gateway/fixtures.js'

/**
 * API.md section 5: deactivating a channel revokes every visitor session of it, on every route
 * (they can no longer post, read or mail), for good: reactivating the channel does not revive
 * them; POST /auth with a revoked session makes a new guest.
 */

const bootstrap = (app: Awaited<ReturnType<typeof build>>['app'], channelId: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/auth', headers, payload: { channelId, name: 'Gina', email: 'gina@example.test' } })

t.test('a deactivated channel revokes its visitor sessions everywhere, for good', async (t) => {
  const { app } = await build(t, { env: { JOBS_WORKER: 'false' } })
  const ws = await seedWorkspace(app)
  const boot = await bootstrap(app, ws.channelId)
  t.equal(boot.statusCode, 201)
  const guest = { 'x-visitor-session': boot.json().visitorSession }
  const guestId = boot.json().guestId
  const conv = await app.inject({ method: 'POST', url: '/conversations', headers: guest, payload: { channelId: ws.channelId, guestId } })
  t.equal(conv.statusCode, 201)
  const id = conv.json().id
  t.equal((await app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers: guest, payload: { body: 'before' } })).statusCode, 201)

  const off = await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.admin.headers, payload: { active: false } })
  t.equal(off.statusCode, 200)

  const attempts: [string, InjectOptions][] = [
    ['post', { method: 'POST', url: `/conversations/${id}/messages`, headers: guest, payload: { body: 'after' } }],
    ['read', { method: 'GET', url: `/conversations/${id}`, headers: guest }],
    ['read messages', { method: 'GET', url: `/conversations/${id}/messages`, headers: guest }],
    ['history', { method: 'GET', url: `/conversations/guest/${guestId}/history`, headers: guest }],
    ['mail', { method: 'POST', url: `/conversations/${id}/transcript`, headers: guest, payload: {} }],
    ['download', { method: 'GET', url: `/conversations/${id}/download`, headers: guest }],
    ['mark seen', { method: 'PATCH', url: `/conversations/${id}/mark-seen`, headers: guest }],
    ['create', { method: 'POST', url: '/conversations', headers: guest, payload: { channelId: ws.channelId, guestId } }],
  ]
  for (const [what, req] of attempts) {
    const res = await app.inject(req)
    t.equal(res.statusCode, 401, `${what}: 401`)
    t.equal(res.json().code, 'SESSION_REVOKED', `${what}: SESSION_REVOKED`)
  }

  const on = await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.admin.headers, payload: { active: true } })
  t.equal(on.statusCode, 200)
  const again = await app.inject({ method: 'GET', url: `/conversations/${id}`, headers: guest })
  t.equal(again.statusCode, 401, 'reactivating the channel does not revive the session')
  t.equal(again.json().code, 'SESSION_REVOKED')

  const fresh = await bootstrap(app, ws.channelId, guest)
  t.equal(fresh.statusCode, 201, 'POST /auth with a revoked session: a new guest')
  t.not(fresh.json().guestId, guestId)
  const freshHeaders = { 'x-visitor-session': fresh.json().visitorSession }
  t.equal((await app.inject({ method: 'GET', url: `/conversations/guest/${fresh.json().guestId}/history`, headers: freshHeaders })).statusCode, 200, 'the new session works')
  t.equal((await app.inject({ method: 'GET', url: `/conversations/${id}`, headers: freshHeaders })).statusCode, 404, "and does not reach the old guest's conversation")

  const rows = await app.deps.sql`SELECT body FROM messages WHERE conversation_id = ${id} ORDER BY created_at`
  t.same(rows.map((r) => r.body), ['before'], 'nothing was posted after the deactivation')
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM transcript_requests`
  t.equal(n, 0, 'nothing was mailed')

  // Another channel's sessions are untouched.
  const other = await app.inject({ method: 'POST', url: '/channels', headers: ws.admin.headers, payload: { name: 'Other' } })
  const otherBoot = await bootstrap(app, other.json().id)
  t.equal((await app.inject({ method: 'GET', url: `/conversations/guest/${otherBoot.json().guestId}/history`, headers: { 'x-visitor-session': otherBoot.json().visitorSession } })).statusCode, 200)
})

t.test('another replica refuses the session within MEMBER_CACHE_TTL_MS', async (t) => {
  const env = { MEMBER_CACHE_TTL_MS: '300' }
  const one = await build(t, { env })
  const two = await build(t, { env, databaseUrl: one.databaseUrl })
  const ws = await seedWorkspace(one.app)
  const boot = await bootstrap(one.app, ws.channelId)
  const guest = { 'x-visitor-session': boot.json().visitorSession }
  const history = `/conversations/guest/${boot.json().guestId}/history`
  t.equal((await two.app.inject({ method: 'GET', url: history, headers: guest })).statusCode, 200, 'replica two has the channel cached')
  t.equal((await one.app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.admin.headers, payload: { active: false } })).statusCode, 200)
  t.equal((await one.app.inject({ method: 'GET', url: history, headers: guest })).statusCode, 401, 'at once on the replica that made the change')
  await new Promise((r) => setTimeout(r, 350))
  const later = await two.app.inject({ method: 'GET', url: history, headers: guest })
  t.equal(later.statusCode, 401, 'within the cache time on the other')
  t.equal(later.json().code, 'SESSION_REVOKED')
})

t.test('the gateway: a connected visitor is disconnected, a new handshake refused with SESSION_REVOKED', async (t) => {
  const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
  const env = { MEMBER_CACHE_TTL_MS: '200', PRESENCE_TTL_S: '2', PRESENCE_HEARTBEAT_MS: '200' }
  const [{ app }, gateway] = await Promise.all([
    build(t, { databaseUrl, env: { REDIS_PREFIX: redisPrefix, ...env } }),
    startGateway(t, { databaseUrl, redisPrefix, env }),
  ])
  const ws = await seedWorkspace(app)
  const boot = await bootstrap(app, ws.channelId)
  const auth = { visitorSession: boot.json().visitorSession }
  const socket = await connect(t, gateway.url, auth)
  const disconnected = new Promise<string>((resolve) => socket.once('disconnect', (reason) => resolve(String(reason))))
  t.equal((await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.admin.headers, payload: { active: false } })).statusCode, 200)
  t.equal(await disconnected, 'io server disconnect', 'the connected socket is disconnected by a heartbeat')
  await new Promise((r) => setTimeout(r, 250))
  const err = await refusal(t, gateway.url, auth)
  t.equal(err.message, 'SESSION_REVOKED')
  t.equal(err.data?.code, 'SESSION_REVOKED')
})
