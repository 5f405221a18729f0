import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { bucketOf } from '../../src/analytics/histogram.js'
import { moveConversation, steps } from './fixtures.js'

/**
 * Section 15 through HTTP: permission, validation, each metric's definition, idempotency under
 * retries and concurrent closes, deletes, other workspaces, time zones with DST, the CSV.
 */

const RANGE = 'from=2020-01-01&to=2020-12-31'

t.test('analytics', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other Co')
  const s = steps(app)
  const now = Date.now()
  const around = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`

  await t.test('permission: owners and admins only; credentials first', async (t) => {
    for (const path of ['live', 'summary', 'agents', 'channels', 'timeseries?metric=messagesSent', 'conversations.csv']) {
      const url = `/analytics/${path}`
      t.equal((await app.inject({ url })).statusCode, 401, `${url} without credentials`)
      t.equal((await app.inject({ url, headers: ws.agent.headers })).json().code, 'FORBIDDEN', `${url} as an agent`)
      t.equal((await app.inject({ url, headers: ws.admin.headers })).statusCode, 200, `${url} as an admin`)
      t.equal((await app.inject({ url, headers: ws.owner.headers })).statusCode, 200, `${url} as an owner`)
    }
  })

  await t.test('validation names the parameter', async (t) => {
    const bad: [string, RegExp][] = [
      ['/analytics/summary?timezone=Mars/Olympus', /timezone/],
      ['/analytics/summary?timezone=%2B01:00', /timezone/],
      ['/analytics/summary?from=2026-03-01&to=2026-02-01', /'to'/],
      ['/analytics/summary?from=2026-03-01&to=2026-03-01', /'to'/],
      ['/analytics/summary?from=2025-01-01&to=2026-01-03', /366/],
      ['/analytics/summary?from=2026-02-30', /'from'/],
      ['/analytics/summary?from=yesterday', /'from'/],
      ['/analytics/summary?to=2026-01-01T25:00:00Z', /'to'/],
      ['/analytics/summary?bogus=1', /bogus/],
      ['/analytics/summary?channelId=nope', /channelId/],
      ['/analytics/live?from=2026-01-01', /from/],
      ['/analytics/timeseries', /metric/],
      ['/analytics/timeseries?metric=magic', /metric/],
      ['/analytics/timeseries?metric=messagesSent&groupBy=year', /groupBy/],
      ['/analytics/conversations.csv?timezone=Nowhere/City', /timezone/],
    ]
    for (const [url, re] of bad) {
      const res = await app.inject({ url, headers: ws.owner.headers })
      t.equal(res.statusCode, 400, url)
      t.equal(res.json().code, 'VALIDATION_ERROR', url)
      t.match(res.json().message, re, url)
    }
    // 366 local days across a DST change are allowed; the end in the future too.
    const ok = await app.inject({ url: '/analytics/summary?from=2026-01-01&to=2027-01-02&timezone=Europe/Berlin', headers: ws.owner.headers })
    t.equal(ok.statusCode, 200, ok.body)
    t.same([ok.json().from, ok.json().to], ['2025-12-31T23:00:00.000Z', '2027-01-01T23:00:00.000Z'], 'bare dates are local midnights')
    const prev = await app.inject({ url: '/analytics/summary?from=2026-06-01T00:00:00Z&to=2026-06-03T00:00:00Z', headers: ws.owner.headers })
    t.equal(prev.statusCode, 200)
  })

  // One conversation's life, through HTTP: every metric of section 15 from its definition.
  const g = await seedGuest(app, ws, '=HYPERLINK("x")')
  const c = await s.start(g)
  await s.assign(c.id, ws.owner, ws.agent.userId)
  await s.guestSays(c.id, g, 'hello', 'g1')
  await s.guestSays(c.id, g, 'hello', 'g1') // a retry: one message
  await app.inject({ method: 'POST', url: `/conversations/${c.id}/messages`, headers: ws.admin.headers, payload: { body: 'internal', private: true } })
  await s.agentSays(c.id, ws.agent, 'first reply', 'a1')
  await s.agentSays(c.id, ws.agent, 'first reply', 'a1') // a retry
  await s.agentSays(c.id, ws.admin, 'second reply')
  // Concurrent closes: one close.
  await Promise.all([s.close(c.id, ws.agent), s.close(c.id, ws.admin), s.close(c.id, ws.owner)])
  await s.guestSays(c.id, g, 'one more thing') // reopens
  await s.agentSays(c.id, ws.admin, 'sure') // first response of the second open period
  await s.close(c.id, ws.admin)
  await s.reopen(c.id, ws.owner)
  await s.close(c.id, ws.owner) // closed without a reply: a resolution, no first response

  await t.test('summary counts each fact once, by its definition', async (t) => {
    const body = await s.get(`/analytics/summary?${around}`, ws.owner)
    const m = body.current
    t.equal(m.conversationsCreated, 1)
    t.equal(m.conversationsResolved, 3, 'closes, not conversations')
    t.equal(m.messagesReceived, 2)
    t.equal(m.messagesSent, 3)
    t.equal(m.csat.responses, 0)
    t.equal(m.csat.average, null)
    t.equal(m.csat.satisfiedShare, null)
    // Exact: the samples from the events, recomputed here from the messages and closes.
    const msgs = await app.deps.sql<{ at: string; t: string }[]>`
      SELECT created_at::text AS at, sender_type AS t FROM messages WHERE conversation_id = ${c.id} ORDER BY created_at`
    const ev = await app.deps.sql<{ kind: string; seq: number; value: number | null }[]>`
      SELECT kind, seq, value FROM metric_events WHERE conversation_id = ${c.id} ORDER BY kind, seq`
    t.same(
      ev.filter((e) => e.kind === 'first_response').map((e) => e.seq),
      [0, 1],
      'a first response in the first and second open period, none in the third',
    )
    t.equal(msgs.length, 6, 'five public messages and a note')
    const frt = ev.filter((e) => e.kind === 'first_response').map((e) => e.value!).sort((a, b) => a - b)
    t.ok(frt.every((v) => v > 0))
    const near = (a: number, b: number) => Math.abs(a - b) < 1e-9
    t.ok(near(m.firstResponseTime.avg, (frt[0] + frt[1]) / 2), 'average')
    t.ok(near(m.firstResponseTime.median, (frt[0] + frt[1]) / 2), 'percentile_cont of two samples')
    t.ok(near(m.firstResponseTime.p90, frt[0] + (frt[1] - frt[0]) * 0.9), 'p90 interpolates')
    t.equal(m.resolutionTime.avg !== null && m.resolutionTime.avg > 0, true)
    t.same(body.previous.conversationsCreated, 0)
    t.same(body.previous.firstResponseTime, { avg: null, median: null, p90: null })
  })

  await t.test('agentId narrows to what is attributed to that member', async (t) => {
    const agent = (await s.get(`/analytics/summary?${around}&agentId=${encodeURIComponent(ws.agent.userId)}`, ws.owner)).current
    t.equal(agent.messagesSent, 1, 'their own messages')
    t.equal(agent.firstResponseTime.avg !== null, true, 'their first response')
    t.equal(agent.messagesReceived, 2, 'guest messages while they were the assignee')
    t.equal(agent.conversationsResolved, 3, 'closes while they were the assignee')
    t.equal(agent.conversationsCreated, 0, 'nobody is assigned at creation')
    const admin = (await s.get(`/analytics/summary?${around}&agentId=${encodeURIComponent(ws.admin.userId)}`, ws.owner)).current
    t.equal(admin.messagesSent, 2)
    t.equal(admin.conversationsResolved, 0)
    const list = await s.get(`/analytics/agents?${around}`, ws.owner)
    t.same(
      list.data.map((a: any) => a.userId).sort(),
      [ws.admin.userId, ws.agent.userId].sort(),
      'every member with anything attributed',
    )
    const channels = await s.get(`/analytics/channels?${around}`, ws.owner)
    t.same(channels.data.map((x: any) => [x.channelId, x.name, x.metrics.conversationsCreated]), [[ws.channelId, 'Website', 1]])
  })

  await t.test("another workspace's ids give empty results, never its data", async (t) => {
    const foreign = (await s.get(`/analytics/summary?${around}&channelId=${ws.channelId}`, other.owner)).current
    t.equal(foreign.conversationsCreated, 0)
    t.equal(foreign.messagesSent, 0)
    t.same((await s.get(`/analytics/agents?${around}&agentId=${encodeURIComponent(ws.agent.userId)}`, other.owner)).data, [])
    t.same((await s.get(`/analytics/channels?${around}`, other.owner)).data, [])
    const csv = await app.inject({ url: `/analytics/conversations.csv?${around}`, headers: other.owner.headers })
    t.equal(csv.body.split('\r\n').filter(Boolean).length, 1, 'header only')
    const unknown = (await s.get(`/analytics/summary?${around}&channelId=00000000-0000-4000-8000-000000000000`, ws.owner)).current
    t.equal(unknown.conversationsCreated, 0)
  })

  await t.test('live: open, unassigned, unattended, waiting', async (t) => {
    const g2 = await seedGuest(app, ws)
    const a = await s.start(g2) // open, unassigned, unattended, not waiting (no message)
    const b = await s.start(g2)
    await s.guestSays(b.id, g2) // waiting, unattended
    const d = await s.start(g2)
    await s.guestSays(d.id, g2)
    await s.agentSays(d.id, ws.agent) // attended, not waiting
    await s.assign(d.id, ws.owner, ws.agent.userId)
    const live = await s.get('/analytics/live', ws.owner)
    t.same(live, { open: 3, unassigned: 2, unattended: 2, waiting: 1, onlineAgents: 0, onlineVisitors: 0 })
    t.same((await s.get(`/analytics/live?channelId=${other.channelId}`, ws.owner)).open, 0)
    await s.close(a.id, ws.owner)
    await s.remove(b.id, ws.owner)
    t.same((await s.get('/analytics/live', ws.owner)).open, 1)
  })

  await t.test('a deleted conversation leaves every metric', async (t) => {
    const before = (await s.get(`/analytics/summary?${around}`, ws.owner)).current
    await s.remove(c.id, ws.owner)
    const after = (await s.get(`/analytics/summary?${around}`, ws.owner)).current
    t.equal(after.conversationsCreated, before.conversationsCreated - 1)
    t.equal(after.conversationsResolved, before.conversationsResolved - 3)
    t.equal(after.messagesSent, before.messagesSent - 3)
    const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM metric_events WHERE conversation_id = ${c.id}`
    t.equal(n, 0)
  })

  await t.test('time zones: a DST day in New York, bare dates, hours that repeat or vanish', async (t) => {
    const g3 = await seedGuest(app, ws)
    // Spring forward in New York: 2026-03-08 02:00 EST -> 03:00 EDT, a 23-hour day.
    // Instants (UTC): 04:30Z = Mar 7 23:30 EST; 05:30Z = Mar 8 00:30 EST; 06:59Z = 01:59 EST;
    // 07:00Z = 03:00 EDT; 03:59Z Mar 9 = Mar 8 23:59 EDT; 04:00Z Mar 9 = Mar 9 00:00 EDT.
    const at = ['2026-03-08T04:30:00Z', '2026-03-08T05:30:00Z', '2026-03-08T06:59:00Z', '2026-03-08T07:00:00Z', '2026-03-09T03:59:00Z', '2026-03-09T04:00:00Z']
    for (const instant of at) {
      const conv = await s.start(g3)
      await moveConversation(app, conv.id, instant)
    }
    const q = 'from=2026-03-07&to=2026-03-10&timezone=America/New_York'
    const days = await s.get(`/analytics/timeseries?${q}&metric=conversationsCreated&groupBy=day`, ws.owner)
    t.same(days.data, [
      { bucketStart: '2026-03-07T05:00:00.000Z', value: 1 },
      { bucketStart: '2026-03-08T05:00:00.000Z', value: 4 },
      { bucketStart: '2026-03-09T04:00:00.000Z', value: 1 },
    ], 'local midnights; the DST day is 23 hours and holds its four conversations')
    const summary = await s.get(`/analytics/summary?from=2026-03-08&to=2026-03-09&timezone=America/New_York`, ws.owner)
    t.equal(summary.from, '2026-03-08T05:00:00.000Z')
    t.equal(summary.to, '2026-03-09T04:00:00.000Z')
    t.equal(summary.current.conversationsCreated, 4)
    t.equal(summary.previous.conversationsCreated, 1, 'the 23 hours before')
    const hours = await s.get(`/analytics/timeseries?from=2026-03-08&to=2026-03-09&timezone=America/New_York&metric=conversationsCreated&groupBy=hour`, ws.owner)
    t.equal(hours.data.length, 23, 'the skipped hour is no bucket')
    t.same(hours.data.filter((b: any) => b.value > 0).map((b: any) => b.bucketStart), [
      '2026-03-08T05:00:00.000Z',
      '2026-03-08T06:00:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T03:00:00.000Z',
    ])
    // Fall back: 2026-11-01 is 25 hours long, 01:00 local happens twice.
    const fall = await s.get(`/analytics/timeseries?from=2026-11-01&to=2026-11-02&timezone=America/New_York&metric=messagesSent&groupBy=hour`, ws.owner)
    t.equal(fall.data.length, 25)
    t.ok(fall.data.every((b: any) => b.value === 0), 'empty count buckets are 0')
    const weeks = await s.get(`/analytics/timeseries?${q}&metric=firstResponseTime&groupBy=week`, ws.owner)
    t.same(weeks.data, [
      { bucketStart: '2026-03-02T05:00:00.000Z', value: null },
      { bucketStart: '2026-03-09T04:00:00.000Z', value: null },
    ], 'weeks start on Monday, local midnight; empty time buckets are null')
    // A half-hour zone: buckets at :30 UTC, read partly from raw events (04:00Z on the 9th is
    // 09:30 in Kolkata, the 9th).
    const india = await s.get(`/analytics/timeseries?from=2026-03-08&to=2026-03-10&timezone=Asia/Kolkata&metric=conversationsCreated&groupBy=day`, ws.owner)
    t.same(india.data, [
      { bucketStart: '2026-03-07T18:30:00.000Z', value: 4 },
      { bucketStart: '2026-03-08T18:30:00.000Z', value: 2 },
    ])
  })

  await t.test('conversations.csv: RFC 4180, names, formula injection, range', async (t) => {
    const g4 = await seedGuest(app, ws, 'Ann "the, tester"\nSmith')
    const conv = await s.start(g4)
    await s.guestSays(conv.id, g4)
    await s.agentSays(conv.id, ws.agent)
    await s.close(conv.id, ws.agent)
    await s.assign(conv.id, ws.owner, ws.agent.userId)
    const res = await app.inject({ url: `/analytics/conversations.csv?${around}`, headers: ws.owner.headers })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['content-type'], 'text/csv; charset=utf-8')
    t.notOk(res.body.startsWith('\ufeff'), 'no BOM')
    const lines = res.body.split('\r\n')
    t.equal(lines[0], 'id,channel,guestName,agent,status,createdAt,firstResponseAt,firstResponseSeconds,resolvedAt,resolutionSeconds,messages,csat')
    t.ok(res.body.endsWith('\r\n'))
    const row = res.body.slice(res.body.indexOf(conv.id))
    t.match(row, `${conv.id},Website,"Ann ""the, tester""\nSmith",Agnes Agent,RESOLVED,`)
    const [ev] = await app.deps.sql<{ v: number }[]>`SELECT value AS v FROM metric_events WHERE conversation_id = ${conv.id} AND kind = 'first_response'`
    t.match(row, `,${ev.v},`, 'first response seconds')
    t.match(row, /,2,\r\n/, 'two public messages, no rating')
    t.notOk(res.body.includes(c.id), 'deleted conversations are not exported')
    // The moved conversations of the DST test are outside `around`; the formula-named guest's
    // conversation was deleted: a fresh one shows the prefix.
    const conv2 = await s.start(g)
    const res2 = await app.inject({ url: `/analytics/conversations.csv?${around}`, headers: ws.owner.headers })
    t.match(res2.body, `${conv2.id},Website,"'=HYPERLINK(""x"")",,OPEN,`)
    const dst = await app.inject({ url: '/analytics/conversations.csv?from=2026-03-08&to=2026-03-09&timezone=America/New_York', headers: ws.owner.headers })
    t.equal(dst.body.split('\r\n').filter(Boolean).length, 1 + 4)
    const agentOnly = await app.inject({ url: `/analytics/conversations.csv?${around}&agentId=${encodeURIComponent(ws.agent.userId)}`, headers: ws.owner.headers })
    t.ok(agentOnly.body.includes(conv.id))
    t.notOk(agentOnly.body.includes(conv2.id))
  })

  await t.test('the database buckets durations as src/analytics/histogram.ts does', async (t) => {
    const values = [0, 0.999, 1, 1.05, 2, 59.9, 60, 3600, 86_400, 1e7, 1e9]
    const rows = await app.deps.sql<{ b: number }[]>`SELECT metric_bucket(v) AS b FROM unnest(${values}::float8[]) WITH ORDINALITY AS u(v, i) ORDER BY i`
    t.same(rows.map((r) => r.b), values.map(bucketOf))
  })

  await t.test('long ranges: rollups and raw ends add up to the events', async (t) => {
    const all = await s.get(`/analytics/summary?from=2026-01-01T00:17:00.123Z&to=2026-12-31T23:59:59.999Z`, ws.owner)
    const [{ n }] = await app.deps.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM metric_events
      WHERE workspace_id = ${ws.workspaceId} AND kind = 'conversation_created'
        AND occurred_at >= '2026-01-01T00:17:00.123Z' AND occurred_at < '2026-12-31T23:59:59.999Z'`
    t.equal(all.current.conversationsCreated, n)
    t.equal((await s.get(`/analytics/summary?${RANGE}`, ws.owner)).current.conversationsCreated, 0)
  })
})
