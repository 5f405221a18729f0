import t from 'tap'
import { recordCsat } from '../../src/analytics/record.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { steps } from './fixtures.js'

/**
 * CSAT in the metrics. POST /support/csat (issue 17) is not built yet: this calls recordCsat the
 * way its domain function will, inside the transaction that writes the rating, then reads the
 * metrics through HTTP.
 */
t.test('csat: responses, average, satisfied share; a replaced rating counts once', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const s = steps(app)
  const g = await seedGuest(app, ws)
  const rate = async (conversationId: string, rating: number) =>
    app.deps.sql.begin(async (tx) => {
      const [c] = await tx<{ id: string; workspaceId: string; channelId: string; assignedAgentId: string | null; at: string }[]>`
        SELECT id, workspace_id AS "workspaceId", channel_id AS "channelId", assigned_agent_id AS "assignedAgentId",
               clock_timestamp() AS at
        FROM conversations WHERE id = ${conversationId} FOR UPDATE`
      await recordCsat(tx, c, rating, c.at)
    })
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
