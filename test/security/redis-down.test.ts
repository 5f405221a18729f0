import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startOwnRedis } from './redis-server.js'

/**
 * Rate limits while Redis is down (API.md section 2): they fall back to a per-process limiter with
 * the same numbers and never switch off. A Redis of this file's own is killed under a running app.
 */
const redis = await startOwnRedis(t)

t.test('Redis down: the limits are still enforced (no skipOnError)', async (t) => {
  const { app } = await build(t, {
    env: { REDIS_URL: redis.url, VISITOR_MESSAGES_PER_MIN: '3', AUTH_RATE_LIMIT_PER_MIN: '2', JOBS_WORKER: 'false' },
  })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const created = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: ws.channelId, guestId: guest.guestId } })
  t.equal(created.statusCode, 201)
  const conv = created.json()
  const post = () => app.inject({ method: 'POST', url: `/conversations/${conv.id}/messages`, headers: guest.headers, payload: { body: 'hi' } })
  const boot = () => app.inject({ method: 'POST', url: '/auth', payload: { channelId: ws.channelId, name: 'G', email: 'g@example.test' }, remoteAddress: '203.0.113.5' })

  t.equal((await post()).statusCode, 201, 'one message while Redis is up')
  await redis.stop()
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 503, 'Redis is down')
  const during = [(await post()).statusCode, (await post()).statusCode, (await post()).statusCode, (await post()).statusCode]
  t.same(during, [201, 201, 201, 429], 'the same 3 a minute, counted in this process')
  t.same([(await boot()).statusCode, (await boot()).statusCode, (await boot()).statusCode], [201, 201, 429], 'POST /auth too')
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${conv.id}`
  t.equal(n, 4, 'one before the outage, three during it')
})
