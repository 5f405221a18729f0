import t from 'tap'
import { sweepBreaches } from '../../src/sla/breaches.js'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { patch, send, startConversation } from '../conversations/fixtures.js'
import { createPolicy, getConversation, MINUTE, sleep } from './fixtures.js'

/**
 * The SLA clock through HTTP (API.md section 18): first response, next response, resolution,
 * reopen, the pause while PENDING or SNOOZED, recomputation on a policy change, list sort and
 * filters, and metrics.sla counted once.
 */

const near = (a: string | null, b: number, tol = 50) => a !== null && Math.abs(Date.parse(a) - b) <= tol

t.test('the sla object through the conversation life', async (t) => {
  const { app } = await build(t, { env: { SLA_SWEEP_INTERVAL_MS: '20000' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const policy = await createPolicy(app, ws, { name: 'Std', firstResponseMinutes: 10, nextResponseMinutes: 20, resolutionMinutes: 60 })
  const c = await startConversation(app, guest)
  const created = Date.parse((await getConversation(app, ws, c.id)).createdAt)

  await t.test('first response runs from creation; a note or a guest message does not meet it', async (t) => {
    await send(app, guest.headers, c.id, 'hello')
    await app.inject({ method: 'POST', url: `/conversations/${c.id}/messages`, headers: ws.agent.headers, payload: { body: 'note', private: true } })
    const v = await getConversation(app, ws, c.id)
    t.match(v.sla, { policyId: policy.id, policyName: 'Std', status: 'ON_TRACK', breaches: [], nextResponseDueAt: null })
    t.ok(near(v.sla.firstResponseDueAt, created + 10 * MINUTE), 'first response due 10 minutes after creation')
    t.ok(near(v.sla.resolutionDueAt, created + 60 * MINUTE), 'resolution due 60 minutes after creation')
  })

  await t.test('a public agent reply meets first response; the next guest message starts next response', async (t) => {
    await send(app, ws.agent.headers, c.id, 'hi, how can I help?')
    let v = await getConversation(app, ws, c.id)
    t.equal(v.sla.firstResponseDueAt, null, 'met: no longer running')
    t.equal(v.sla.nextResponseDueAt, null, 'no guest message since the reply')
    const m = (await send(app, guest.headers, c.id, 'my order is late')).json()
    v = await getConversation(app, ws, c.id)
    t.ok(near(v.sla.nextResponseDueAt, Date.parse(m.createdAt) + 20 * MINUTE), 'next response due 20 minutes after the guest message')
    await send(app, guest.headers, c.id, 'hello?')
    const again = await getConversation(app, ws, c.id)
    t.equal(again.sla.nextResponseDueAt, v.sla.nextResponseDueAt, 'a second guest message does not restart it')
    await send(app, ws.agent.headers, c.id, 'on it')
    v = await getConversation(app, ws, c.id)
    t.equal(v.sla.nextResponseDueAt, null)
    t.equal(v.sla.status, 'ON_TRACK', 'resolution still runs')
  })

  await t.test('closing meets resolution; a reopen starts a new one, first response is measured once', async (t) => {
    let v = (await patch(app, ws.agent.headers, c.id, 'close')).json()
    t.match(v.sla, { firstResponseDueAt: null, nextResponseDueAt: null, resolutionDueAt: null, status: 'MET', breaches: [] })
    v = (await patch(app, ws.agent.headers, c.id, 'reopen')).json()
    t.ok(near(v.sla.resolutionDueAt, Date.parse(v.updatedAt) + 60 * MINUTE, 100), 'a new resolution target from the reopen')
    t.equal(v.sla.firstResponseDueAt, null, 'first response is not measured again')
    t.equal(v.sla.status, 'ON_TRACK')
  })

  await t.test('metrics.sla counts each met target once', async (t) => {
    const res = await app.inject({ method: 'GET', url: '/analytics/summary', headers: ws.admin.headers })
    t.equal(res.statusCode, 200)
    t.same(res.json().current.sla, {
      firstResponse: { met: 1, breached: 0, hitRate: 1 },
      nextResponse: { met: 1, breached: 0, hitRate: 1 },
      resolution: { met: 1, breached: 0, hitRate: 1 },
    })
  })
})

t.test('the clocks stop while PENDING or SNOOZED; the time there is added to every open due date', async (t) => {
  const { app } = await build(t, { env: { SLA_SWEEP_INTERVAL_MS: '20000' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  await createPolicy(app, ws, { name: 'Std', firstResponseMinutes: 10, resolutionMinutes: 60 })
  const c = await startConversation(app, guest)
  const before = await getConversation(app, ws, c.id)
  let v = (await patch(app, ws.agent.headers, c.id, 'pending')).json()
  t.match(v.sla, { firstResponseDueAt: null, resolutionDueAt: null, status: 'ON_TRACK' }, 'not running while PENDING')
  const [{ due }] = await app.deps.sql<{ due: string | null }[]>`SELECT sla_due_at AS due FROM conversations WHERE id = ${c.id}`
  t.equal(due, null, 'no running due date to sort by')
  await sleep(700)
  v = (await patch(app, ws.agent.headers, c.id, 'snooze', { until: null })).json()
  t.equal(v.sla.firstResponseDueAt, null, 'SNOOZED: still stopped')
  await sleep(500)
  // A guest message wakes it (OPEN): the clocks run again, later by the time spent waiting.
  await send(app, guest.headers, c.id, 'back')
  v = await getConversation(app, ws, c.id)
  const [{ ms }] = await app.deps.sql<{ ms: number }[]>`
    SELECT extract(epoch FROM max(at) FILTER (WHERE status = 'OPEN') - min(at))::float8 * 1000 AS ms FROM conversation_status_log WHERE conversation_id = ${c.id}`
  t.ok(ms >= 1100, `paused ${ms} ms`)
  const shift = Date.parse(v.sla.firstResponseDueAt) - Date.parse(before.sla.firstResponseDueAt)
  t.ok(Math.abs(shift - ms) < 50, `first response moved by the pause (${shift} ms)`)
  t.equal(Date.parse(v.sla.resolutionDueAt) - Date.parse(before.sla.resolutionDueAt), shift, 'and resolution by the same')
  // A reply while PENDING meets first response (the pause so far counts).
  await patch(app, ws.agent.headers, c.id, 'pending')
  await send(app, ws.agent.headers, c.id, 'answered while waiting')
  v = (await patch(app, ws.agent.headers, c.id, 'reopen')).json()
  t.equal(v.sla.firstResponseDueAt, null, 'met while pending')
  t.ok(v.sla.resolutionDueAt !== null, 'resolution runs again')
})

t.test('a policy change recomputes from history; a recorded breach stays; breaches and analytics count once', async (t) => {
  const { app } = await build(t, { env: { SLA_SWEEP_INTERVAL_MS: '20000' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const policy = await createPolicy(app, ws, { name: 'Std', firstResponseMinutes: 10, resolutionMinutes: 60 })
  const c = await startConversation(app, guest)
  const created = Date.parse((await getConversation(app, ws, c.id)).createdAt)

  const up = await app.inject({ method: 'PATCH', url: `/sla-policies/${policy.id}`, headers: ws.admin.headers, payload: { firstResponseMinutes: 30 } })
  t.equal(up.statusCode, 200)
  let v = await getConversation(app, ws, c.id)
  t.ok(near(v.sla.firstResponseDueAt, created + 30 * MINUTE), 'first response recomputed from the creation')

  // The first response falls due (moved into the past in the database, as if 30 minutes went by).
  await app.deps.sql`UPDATE sla_targets SET due_at = now() - interval '1 second' WHERE conversation_id = ${c.id} AND target = 'FIRST_RESPONSE'`
  t.equal(await sweepBreaches(app.deps), 1, 'one breach recorded')
  t.equal(await sweepBreaches(app.deps), 0, 'a second sweep records nothing')
  v = await getConversation(app, ws, c.id)
  t.match(v.sla, { status: 'BREACHED', breaches: ['FIRST_RESPONSE'] })
  t.ok(v.sla.firstResponseDueAt !== null, 'an overdue target still shows its due time')

  const breached = await app.inject({ method: 'GET', url: '/conversations?sla=breached', headers: ws.agent.headers })
  t.same(breached.json().data.map((x: any) => x.id), [c.id], 'sla=breached lists it')

  // The policy is relaxed: the due date is recomputed, the breach stays.
  await app.inject({ method: 'PATCH', url: `/sla-policies/${policy.id}`, headers: ws.admin.headers, payload: { firstResponseMinutes: 120 } })
  v = await getConversation(app, ws, c.id)
  t.ok(near(v.sla.firstResponseDueAt, created + 120 * MINUTE), 'recomputed')
  t.same(v.sla.breaches, ['FIRST_RESPONSE'], 'the breach stays')

  // The reply comes (and is retried with the same clientMessageId): a breached target is never counted met.
  const r1 = await send(app, ws.agent.headers, c.id, 'sorry for the wait', 'cm-1')
  const r2 = await send(app, ws.agent.headers, c.id, 'sorry for the wait', 'cm-1')
  t.equal(r1.json().id, r2.json().id, 'the retry is the same message')
  await patch(app, ws.agent.headers, c.id, 'close')
  await patch(app, ws.agent.headers, c.id, 'close')
  const res = await app.inject({ method: 'GET', url: '/analytics/summary', headers: ws.admin.headers })
  t.same(res.json().current.sla, {
    firstResponse: { met: 0, breached: 1, hitRate: 0 },
    nextResponse: { met: 0, breached: 0, hitRate: null },
    resolution: { met: 1, breached: 0, hitRate: 1 },
  })
  const agents = await app.inject({ method: 'GET', url: '/analytics/agents', headers: ws.admin.headers })
  t.equal(agents.statusCode, 200)
  const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sla_breaches WHERE conversation_id = ${c.id}`
  t.equal(n, 1, 'one breach row')
})

t.test('a reply after the due time, before the sweep, is a breach, not a met target', async (t) => {
  const { app } = await build(t, { env: { SLA_SWEEP_INTERVAL_MS: '20000' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  await createPolicy(app, ws, { name: 'Std', firstResponseMinutes: 10 })
  const c = await startConversation(app, guest)
  // As if the conversation was created 11 minutes ago (the clock replays from its history).
  await app.deps.sql`UPDATE conversations SET created_at = created_at - interval '11 minutes' WHERE id = ${c.id}`
  await send(app, ws.agent.headers, c.id, 'late reply')
  const v = await getConversation(app, ws, c.id)
  t.match(v.sla, { status: 'BREACHED', breaches: ['FIRST_RESPONSE'], firstResponseDueAt: null })
  t.equal(await sweepBreaches(app.deps), 0, 'nothing left for the sweep')
})

t.test('sortBy=slaDueAt: nearest running due first, overdue first of all, none last; sla=due', async (t) => {
  const { app } = await build(t, { env: { SLA_SWEEP_INTERVAL_MS: '20000' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const noPolicy = await startConversation(app, guest)
  const p = await createPolicy(app, ws, { name: 'Std', firstResponseMinutes: 30 })
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push((await startConversation(app, await seedGuest(app, ws, `G${i}`))).id)
  // Spread the due dates: conversation i due in (i * 10 - 15) minutes: the first two overdue.
  for (let i = 0; i < ids.length; i++) {
    await app.deps.sql`UPDATE sla_targets SET due_at = now() + ${`${i * 10 - 15} minutes`}::interval, breached = ${i < 2} WHERE conversation_id = ${ids[i]}`
    await app.deps.sql`UPDATE conversations SET sla_due_at = now() + ${`${i * 10 - 15} minutes`}::interval WHERE id = ${ids[i]}`
  }
  const pending = await startConversation(app, guest)
  await patch(app, ws.agent.headers, pending.id, 'pending')
  const seen: string[] = []
  let cursor: string | undefined
  do {
    const res = await app.inject({ method: 'GET', url: `/conversations?sortBy=slaDueAt&limit=2${cursor ? `&cursor=${cursor}` : ''}`, headers: ws.agent.headers })
    t.equal(res.statusCode, 200)
    seen.push(...res.json().data.map((x: any) => x.id))
    cursor = res.json().nextCursor ?? undefined
  } while (cursor)
  t.same(seen, [...ids, noPolicy.id], 'by due date, overdue first, without one last; every row once')
  const asc = await app.inject({ method: 'GET', url: '/conversations?sortBy=slaDueAt&sortOrder=desc&limit=100', headers: ws.agent.headers })
  t.same(asc.json().data.map((x: any) => x.id), [...ids, noPolicy.id], 'sortOrder does not apply')
  const view = await app.inject({ method: 'POST', url: '/views', headers: ws.agent.headers, payload: { name: 'SLA queue', scope: 'personal', filters: {}, sortBy: 'slaDueAt' } })
  t.equal(view.statusCode, 201)
  const viewed = await app.inject({ method: 'GET', url: `/views/${view.json().id}/conversations?limit=100`, headers: ws.agent.headers })
  t.same(viewed.json().data.map((x: any) => x.id), [...ids, noPolicy.id], 'a saved view sorts the same way')
  const due = await app.inject({ method: 'GET', url: '/conversations?sla=due&status=active&limit=100', headers: ws.agent.headers })
  t.same(due.json().data.map((x: any) => x.id).sort(), [...ids].sort(), 'sla=due: a target running (not paused, not without policy)')
  const bad = await app.inject({ method: 'GET', url: '/conversations?sla=late', headers: ws.agent.headers })
  t.equal(bad.statusCode, 400)
  const closed = await app.inject({ method: 'GET', url: '/conversations/closed?sortBy=slaDueAt', headers: ws.agent.headers })
  t.equal(closed.statusCode, 400)
  const mine = await app.inject({ method: 'GET', url: '/conversations/Myconversation?sortBy=slaDueAt', headers: ws.agent.headers })
  t.equal(mine.statusCode, 200)
  t.equal((await getConversation(app, ws, ids[0])).sla.policyId, p.id)
})
