import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { steps } from './fixtures.js'

/**
 * CSAT in the metrics: ratings given and replaced through POST /support/csat (rateConversation
 * records the sample in the rating's transaction), read back through the analytics routes.
 */
t.test('csat: responses, average, satisfied share; a replaced rating counts once', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const s = steps(app)
  const g = await seedGuest(app, ws)
  const enabled = await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { widget: { csatEnabled: true } } })
  t.equal(enabled.statusCode, 200)
  const rate = async (conversationId: string, rating: number) => {
    const res = await app.inject({ method: 'POST', url: '/support/csat', headers: g.headers, payload: { conversationId, rating } })
    t.ok([200, 201].includes(res.statusCode), `rating ${rating}: ${res.statusCode}`)
  }
  const ids: string[] = []
  for (const rating of [5, 4, 2]) {
    const c = await s.start(g)
    await s.assign(c.id, ws.owner, ws.agent.userId)
    await s.close(c.id, ws.agent)
    await rate(c.id, rating)
    ids.push(c.id)
  }
  await rate(ids[2], 3) // replaces the 2
  await rate(ids[0], 5) // the same again
  const now = Date.now()
  const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`
  const m = (await s.get(`/analytics/summary?${range}`, ws.owner)).current
  t.same(m.csat, { responses: 3, average: 4, satisfiedShare: 2 / 3 })
  const agent = (await s.get(`/analytics/agents?${range}`, ws.owner)).data.find((a: any) => a.userId === ws.agent.userId)
  t.same(agent.metrics.csat, { responses: 3, average: 4, satisfiedShare: 2 / 3 }, 'attributed to the assignee')
  const series = await s.get(`/analytics/timeseries?${range}&metric=csatAverage&groupBy=hour`, ws.owner)
  t.ok(series.data.some((b: any) => b.value === 4))
  const csv = await app.inject({ url: `/analytics/conversations.csv?${range}`, headers: ws.owner.headers })
  t.match(csv.body, new RegExp(`${ids[2]},.*,3\\r\\n`), 'the CSV shows the current rating')
  await s.remove(ids[0], ws.owner)
  t.same((await s.get(`/analytics/summary?${range}`, ws.owner)).current.csat, { responses: 2, average: 3.5, satisfiedShare: 0.5 })
})

t.test('an offline message counts as a created conversation and a received message, once', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const s = steps(app)
  const g = await seedGuest(app, ws)
  const res = await app.inject({ method: 'POST', url: '/support/offline-message', headers: g.headers, payload: { body: 'Are you open on Sunday?' } })
  t.equal(res.statusCode, 201)
  const now = Date.now()
  const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`
  const m = (await s.get(`/analytics/summary?${range}`, ws.owner)).current
  t.equal(m.conversationsCreated, 1)
  t.equal(m.messagesReceived, 1)
  const live = await s.get('/analytics/live', ws.owner)
  t.same([live.open, live.unattended, live.waiting], [1, 1, 1], 'waiting on the team, with no reply yet')
})

t.test('concurrent ratings of one conversation count as one sample, the one that stands', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const s = steps(app)
  const g = await seedGuest(app, ws)
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { widget: { csatEnabled: true } } })
  const c = await s.start(g)
  await s.close(c.id, ws.agent)
  const results = await Promise.all(
    [1, 2, 3, 4, 5, 1, 2, 3].map((rating) =>
      app.inject({ method: 'POST', url: '/support/csat', headers: g.headers, payload: { conversationId: c.id, rating } }),
    ),
  )
  t.same(results.map((r) => r.statusCode).sort(), [200, 200, 200, 200, 200, 200, 200, 201])
  const [stored] = await app.deps.sql<{ rating: number }[]>`SELECT rating FROM csat_ratings WHERE conversation_id = ${c.id}`
  const now = Date.now()
  const range = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`
  const m = (await s.get(`/analytics/summary?${range}`, ws.owner)).current
  t.same(m.csat, { responses: 1, average: stored.rating, satisfiedShare: stored.rating >= 4 ? 1 : 0 })
  const other = await seedWorkspace(app)
  t.equal((await s.get(`/analytics/summary?${range}`, other.owner)).current.csat.responses, 0, 'another workspace sees none of it')
})
