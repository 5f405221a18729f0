import t from 'tap'
import { rooms } from '../../src/events.js'
import { sweepBreaches } from '../../src/sla/breaches.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents, startConversation } from '../conversations/fixtures.js'
import { connect, record, startGateway } from '../gateway/fixtures.js'
import { createPolicy, getConversation, MINUTE, sleep } from './fixtures.js'

/**
 * Breaches (API.md section 18): recorded within 30 s of the due time, durably and once across
 * replicas, sent as sla:breached to the members who may see the conversation. The first test runs
 * in real time (a 1-minute target, two API replicas on one database, a real gateway and sockets).
 */

t.test('a 1-minute first response breaches within 30 s, once, with two replicas: one row, one sla:breached per socket', async (t) => {
  const env = { SLA_SWEEP_INTERVAL_MS: '2000' }
  const a = await build(t, { env })
  const b = await build(t, { databaseUrl: a.databaseUrl, env: { ...env, REDIS_PREFIX: a.redisPrefix } })
  const gateway = await startGateway(t, { databaseUrl: a.databaseUrl, redisPrefix: a.redisPrefix })
  const ws = await seedWorkspace(a.app)
  const outsider = await ws.addMember('agent', 'Oscar Outsider')
  // A private team holding the agent: its conversations reach its members, owners and admins only.
  const team = await a.app.inject({ method: 'POST', url: '/teams', headers: ws.admin.headers, payload: { name: 'VIP', private: true } })
  t.equal(team.statusCode, 201)
  const add = await a.app.inject({ method: 'PUT', url: `/teams/${team.json().id}/members/${encodeURIComponent(ws.agent.userId)}`, headers: ws.admin.headers, payload: {} })
  t.ok(add.statusCode < 300, 'agent joins the team')
  await a.app.deps.sql`UPDATE channels SET default_team_id = ${team.json().id} WHERE id = ${ws.channelId}`

  const sockets = {
    agent: await connect(t, gateway.url, { token: ws.agent.token, workspaceId: ws.workspaceId }),
    admin: await connect(t, gateway.url, { token: ws.admin.token, workspaceId: ws.workspaceId }),
    outsider: await connect(t, gateway.url, { token: outsider.token, workspaceId: ws.workspaceId }),
  }
  const got = { agent: record<any>(sockets.agent, 'sla:breached'), admin: record<any>(sockets.admin, 'sla:breached'), outsider: record<any>(sockets.outsider, 'sla:breached') }

  await createPolicy(a.app, ws, { name: 'Fast', firstResponseMinutes: 1 })
  const c = await startConversation(b.app, await seedGuest(a.app, ws))
  const view = await getConversation(a.app, ws, c.id)
  t.equal(view.teamId, team.json().id)
  const dueAt = Date.parse(view.sla.firstResponseDueAt)
  t.ok(Math.abs(dueAt - (Date.parse(view.createdAt) + MINUTE)) < 5, 'due a minute after creation')

  while (got.agent.length === 0 && Date.now() < dueAt + 35_000) await sleep(250)
  const late = Date.now() - dueAt
  t.equal(got.agent.length, 1, 'the team member got sla:breached')
  t.ok(late >= 0 && late < 30_000, `sent ${late} ms after the due time`)
  t.same(got.agent[0], { conversationId: c.id, target: 'FIRST_RESPONSE', dueAt: view.sla.firstResponseDueAt })
  // Both replicas keep sweeping: nothing more comes.
  await sleep(5000)
  t.equal(got.agent.length, 1, 'once for the team member')
  t.equal(got.admin.length, 1, 'once for an admin')
  t.equal(got.outsider.length, 0, 'never to an agent outside the private team')
  const rows = await a.app.deps.sql`SELECT target, cycle FROM sla_breaches WHERE conversation_id = ${c.id}`
  t.equal(rows.length, 1, 'one breach row')
  const [ev] = await a.app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM metric_events WHERE conversation_id = ${c.id} AND kind = 'sla_first_response_breached'`
  t.equal(ev.n, 1, 'one analytics event')
  const after = await getConversation(a.app, ws, c.id)
  t.match(after.sla, { status: 'BREACHED', breaches: ['FIRST_RESPONSE'], firstResponseDueAt: view.sla.firstResponseDueAt })
})

t.test('many due targets, two replicas sweeping at once: each breached exactly once', async (t) => {
  const a = await build(t, { env: { SLA_SWEEP_INTERVAL_MS: '100' } })
  const events = await listenEvents(t, a.redisPrefix)
  const ws = await seedWorkspace(a.app)
  await createPolicy(a.app, ws, { name: 'Std', firstResponseMinutes: 60, resolutionMinutes: 120 })
  const ids: string[] = []
  for (let i = 0; i < 30; i++) ids.push((await startConversation(a.app, await seedGuest(a.app, ws, `G${i}`))).id)
  const b = await build(t, { databaseUrl: a.databaseUrl, env: { SLA_SWEEP_INTERVAL_MS: '100', REDIS_PREFIX: a.redisPrefix } })
  // Every target falls due now (as if the hour went by), while both replicas sweep.
  await a.app.deps.sql`UPDATE sla_targets SET due_at = now() - interval '1 second' WHERE conversation_id = ANY(${ids}::uuid[])`
  let n = 0
  for (let i = 0; i < 100 && n < 60; i++) {
    await sleep(100)
    ;[{ n }] = await a.app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sla_breaches WHERE conversation_id = ANY(${ids}::uuid[])`
  }
  t.equal(n, 60, 'two targets each, all breached')
  await sleep(500)
  const sent = events.events.filter((e) => e.event === 'sla:breached')
  t.equal(sent.length, 60, 'one sla:breached per breach')
  t.same(sent[0].rooms, [rooms.workspace(ws.workspaceId)], 'to the workspace members, never the visitor')
  t.equal(await sweepBreaches(b.app.deps), 0)
  const res = await a.app.inject({ method: 'GET', url: '/analytics/summary', headers: ws.admin.headers })
  t.match(res.json().current.sla, { firstResponse: { met: 0, breached: 30, hitRate: 0 }, resolution: { met: 0, breached: 30 } })
})

t.test('business hours: a 60-minute first response at 16:30 on a Friday is due at 09:30 on Monday; holidays skip', async (t) => {
  const { app } = await build(t, { env: { SLA_SWEEP_INTERVAL_MS: '20000' } })
  const ws = await seedWorkspace(app)
  const hours = {
    timezone: 'Europe/Paris',
    days: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri'].map((d) => [d, [['09:00', '17:00']]])),
    holidays: [] as string[],
  }
  const policy = await createPolicy(app, ws, { name: 'Office', firstResponseMinutes: 60, businessHours: hours })
  t.same(policy.businessHours, hours)
  const c = await startConversation(app, await seedGuest(app, ws))
  // Created on Friday 2026-11-20 at 16:30 in Paris (UTC+1 in November): the history says so.
  await app.deps.sql`UPDATE conversations SET created_at = '2026-11-20T15:30:00Z' WHERE id = ${c.id}`
  // A change of the hours recomputes from the history.
  const res = await app.inject({ method: 'PATCH', url: `/sla-policies/${policy.id}`, headers: ws.admin.headers, payload: { businessHours: { ...hours, holidays: ['2026-11-30'] } } })
  t.equal(res.statusCode, 200)
  let v = await getConversation(app, ws, c.id)
  t.equal(v.sla.firstResponseDueAt, '2026-11-23T08:30:00.000Z', 'Monday 09:30 in Paris')
  t.match(v.sla, { status: 'BREACHED', breaches: ['FIRST_RESPONSE'] }, 'long past: breached at the recomputation')
  await app.inject({ method: 'PATCH', url: `/sla-policies/${policy.id}`, headers: ws.admin.headers, payload: { businessHours: { ...hours, holidays: ['2026-11-23'] } } })
  v = await getConversation(app, ws, c.id)
  t.equal(v.sla.firstResponseDueAt, '2026-11-24T08:30:00.000Z', 'Monday a holiday: Tuesday 09:30')
  t.same(v.sla.breaches, ['FIRST_RESPONSE'], 'the recorded breach stays')
  const bad = await app.inject({ method: 'PATCH', url: `/sla-policies/${policy.id}`, headers: ws.admin.headers, payload: { businessHours: { ...hours, timezone: 'Mars/Olympus' } } })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'VALIDATION_ERROR')
})

t.test('a breach survives a restart: due while no sweeper runs, recorded by the next process to start', async (t) => {
  const a = await build(t, { env: { JOBS_WORKER: 'false' } })
  const ws = await seedWorkspace(a.app)
  await createPolicy(a.app, ws, { name: 'Std', firstResponseMinutes: 60 })
  const c = await startConversation(a.app, await seedGuest(a.app, ws))
  await a.app.deps.sql`UPDATE sla_targets SET due_at = now() - interval '1 second' WHERE conversation_id = ${c.id}`
  await a.app.deps.sql`UPDATE conversations SET sla_due_at = now() - interval '1 second' WHERE id = ${c.id}`
  await sleep(300)
  const [before] = await a.app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sla_breaches WHERE conversation_id = ${c.id}`
  t.equal(before.n, 0, 'nobody sweeping: not yet recorded')
  await a.app.close()
  const b = await build(t, { databaseUrl: a.databaseUrl, env: { SLA_SWEEP_INTERVAL_MS: '100' } })
  let n = 0
  for (let i = 0; i < 50 && n === 0; i++) {
    await sleep(100)
    ;[{ n }] = await b.app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sla_breaches WHERE conversation_id = ${c.id}`
  }
  t.equal(n, 1, 'the new process recorded it')
  t.match((await getConversation(b.app, ws, c.id)).sla, { status: 'BREACHED', breaches: ['FIRST_RESPONSE'] })
})
