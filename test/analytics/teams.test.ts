import { randomUUID } from 'node:crypto'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { addToTeam, createTeam, setDefaultTeam } from '../teams/fixtures.js'
import { rollupState, steps } from './fixtures.js'

/**
 * `/analytics/*?teamId=` (API.md section 16): what is attributed to conversations of that team at
 * the moment of each event, not to the conversation's current team. Through HTTP, over raw events
 * (a range not aligned to hours) and over rollups (whole hours, whole days), which must agree.
 */

const HOUR = 3_600_000
const DAY = 24 * HOUR

t.test('analytics by team: the team at the moment of each event', async (t) => {
  const { app } = await build(t, { env: { ROUTING_SWEEP_MS: '0' } })
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other Co')
  const s = steps(app)
  const insider = await ws.addMember('agent', 'Insider')
  const a = await createTeam(app, ws.owner, { name: 'Sales' })
  const b = await createTeam(app, ws.owner, { name: 'VIP', private: true })
  await addToTeam(app, ws.owner, a.id, ws.agent.userId)
  await addToTeam(app, ws.owner, b.id, insider.userId)
  const theirs = await createTeam(app, other.owner, { name: 'Sales' })
  const team = (id: string, teamId: string | null) =>
    app.inject({ method: 'PATCH', url: `/conversations/${id}/team`, headers: ws.admin.headers, payload: { teamId } })

  // c1: created and first written to without a team, then Sales answers and closes it, then it
  // moves to VIP, where the guest's next message reopens it.
  const g1 = await seedGuest(app, ws, 'First')
  const c1 = await s.start(g1)
  await s.guestSays(c1.id, g1, 'no team yet')
  t.equal((await team(c1.id, a.id)).statusCode, 200)
  await s.assign(c1.id, ws.owner, ws.agent.userId)
  await s.agentSays(c1.id, ws.agent, 'Sales here')
  await s.guestSays(c1.id, g1, 'thanks')
  await s.close(c1.id, ws.agent)
  t.equal((await team(c1.id, b.id)).statusCode, 200)
  await s.guestSays(c1.id, g1, 'one more thing')
  // c2: created on a channel whose default team is Sales.
  await setDefaultTeam(app, ws, a.id)
  const c2 = await s.start(await seedGuest(app, ws, '=Second'))
  t.equal(c2.teamId, a.id)

  const now = Date.now()
  const ranges = {
    raw: `from=${new Date(now - 30 * 60_000).toISOString()}&to=${new Date(now + 30 * 60_000).toISOString()}`,
    hours: `from=${new Date(now - (now % HOUR) - HOUR).toISOString()}&to=${new Date(now - (now % HOUR) + 2 * HOUR).toISOString()}`,
    days: `from=${new Date(now - (now % DAY) - DAY).toISOString()}&to=${new Date(now - (now % DAY) + 2 * DAY).toISOString()}`,
  }
  const summary = async (range: string, q: string) => (await s.get(`/analytics/summary?${range}${q}`, ws.owner)).current
  const counts = (m: any) => [m.conversationsCreated, m.messagesReceived, m.messagesSent, m.conversationsResolved, m.firstResponseTime.avg === null ? 0 : 1]

  for (const [shape, range] of Object.entries(ranges)) {
    await t.test(`summary (${shape})`, async (t) => {
      t.same(counts(await summary(range, '')), [2, 3, 1, 1, 1], 'the workspace')
      t.same(counts(await summary(range, `&teamId=${a.id}`)), [1, 1, 1, 1, 1], 'Sales: the reply, the thanks, the close, and c2 created in it')
      t.same(counts(await summary(range, `&teamId=${b.id}`)), [0, 1, 0, 0, 0], 'VIP: only what happened after the move')
      t.same(counts(await summary(range, `&teamId=${a.id}&agentId=${encodeURIComponent(ws.agent.userId)}`)), [0, 1, 1, 1, 1], 'Sales and its agent')
      t.same(counts(await summary(range, `&teamId=${a.id}&channelId=${ws.channelId}`)), [1, 1, 1, 1, 1], 'Sales and the channel')
      t.same(counts(await summary(range, `&teamId=${a.id}&channelId=${other.channelId}`)), [0, 0, 0, 0, 0], 'another channel')
      t.same(counts(await summary(range, `&teamId=${randomUUID()}`)), [0, 0, 0, 0, 0], 'an unknown team: empty')
      t.same(counts(await summary(range, `&teamId=${theirs.id}`)), [0, 0, 0, 0, 0], "another workspace's team: empty")
    })
  }

  await t.test('agents, channels, timeseries', async (t) => {
    const agents = await s.get(`/analytics/agents?${ranges.raw}&teamId=${a.id}`, ws.owner)
    t.same(agents.data.map((r: any) => [r.userId, r.metrics.messagesSent, r.metrics.messagesReceived]), [[ws.agent.userId, 1, 1]])
    t.same((await s.get(`/analytics/agents?${ranges.days}&teamId=${b.id}`, ws.owner)).data, [], 'VIP: its message went to nobody')
    const channels = await s.get(`/analytics/channels?${ranges.hours}&teamId=${a.id}`, ws.owner)
    t.same(channels.data.map((r: any) => [r.channelId, r.metrics.conversationsCreated]), [[ws.channelId, 1]])
    const series = await s.get(`/analytics/timeseries?${ranges.raw}&teamId=${b.id}&metric=messagesReceived&groupBy=hour`, ws.owner)
    t.equal(series.data.reduce((n: number, x: any) => n + x.value, 0), 1)
  })

  await t.test('the CSV: conversations created in the team', async (t) => {
    const rows = async (q: string) => {
      const res = await app.inject({ url: `/analytics/conversations.csv?${ranges.raw}${q}`, headers: ws.owner.headers })
      t.equal(res.statusCode, 200)
      return res.body.split('\r\n').filter(Boolean).slice(1).map((line) => line.split(',')[0])
    }
    t.same(await rows(''), [c1.id, c2.id])
    t.same(await rows(`&teamId=${a.id}`), [c2.id], 'c1 was created without a team')
    t.same(await rows(`&teamId=${b.id}`), [])
  })

  await t.test('validation and permission', async (t) => {
    for (const path of ['summary', 'agents', 'channels', 'timeseries?metric=messagesSent&', 'conversations.csv']) {
      const url = `/analytics/${path}${path.endsWith('&') ? '' : '?'}teamId=`
      const bad = await app.inject({ url: `${url}none`, headers: ws.owner.headers })
      t.equal(bad.statusCode, 400, url)
      t.match(bad.json(), { code: 'VALIDATION_ERROR', message: /teamId/ })
      // Analytics are for owners and admins, who see every team: an agent outside the private team gets no numbers.
      const agent = await app.inject({ url: `${url}${b.id}`, headers: ws.agent.headers })
      t.equal(agent.statusCode, 403, url)
    }
  })

  await t.test('the rollups the transactions kept equal a rebuild; a delete leaves the team', async (t) => {
    const state = () => rollupState(app.deps.sql, ws.workspaceId)
    const kept = await state()
    t.ok(kept.some((r) => r.key.startsWith('7|')), 'team dims are written')
    t.ok(kept.some((r) => r.key.startsWith('6|') && r.key.includes('|first_response|hist|')), "a team agent's first responses are in its hist")
    await app.deps.sql`SELECT metric_rebuild_rollups()`
    t.same(await state(), kept)
    await s.remove(c2.id, ws.owner)
    for (const range of Object.values(ranges)) t.same(counts(await summary(range, `&teamId=${a.id}`)), [0, 1, 1, 1, 1])
  })
})
