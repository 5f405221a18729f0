import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startRedis } from '../support/processes.js'

t.test('Redis down: the widget still opens, contacts still list, the online list is a 503', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const { app } = await build(t, { env: { REDIS_URL: redis.url, WIDGET_CACHE_MS: '0', JOBS_WORKER: 'false' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws, 'Rita Redisless')
  await redis.stop()

  const widget = await app.inject({ method: 'GET', url: `/support/widget/${ws.channelId}` })
  t.equal(widget.statusCode, 200)
  t.match(widget.json(), { online: false, withinOfficeHours: true })
  const list = await app.inject({ method: 'GET', url: '/visitors', headers: ws.agent.headers })
  t.equal(list.statusCode, 200)
  t.match(list.json().data, [{ id: guest.guestId, online: false, currentPage: null }])
  const profile = await app.inject({ method: 'GET', url: `/visitors/${guest.guestId}`, headers: ws.agent.headers })
  t.match(profile.json(), { id: guest.guestId, online: false, pageVisits: [] })
  for (const url of ['/visitors/online', '/visitors?online=true']) {
    const r = await app.inject({ method: 'GET', url, headers: ws.agent.headers })
    t.same([r.statusCode, r.json().code], [503, 'DEPENDENCY_UNAVAILABLE'], url)
  }
  // With nobody known to be online, an offline message mails the team (queued in PostgreSQL).
  const offline = await app.inject({ method: 'POST', url: '/support/offline-message', headers: guest.headers, payload: { body: 'Anyone there?' } })
  t.equal(offline.statusCode, 201)
  const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'offline-message-mail'`
  t.equal(n, 2, 'owner and admin')
})
