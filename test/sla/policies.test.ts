import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { patch, startConversation } from '../conversations/fixtures.js'
import { createPolicy, getConversation } from './fixtures.js'

/** /sla-policies and PATCH /conversations/:id/sla (API.md section 18): CRUD, validation, matching. */

t.test('policies: CRUD, order, validation and permissions', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')

  await t.test('create, list by position, patch, delete', async (t) => {
    const a = await createPolicy(app, ws, { name: 'Standard', firstResponseMinutes: 60 })
    t.match(a, {
      name: 'Standard',
      firstResponseMinutes: 60,
      nextResponseMinutes: null,
      resolutionMinutes: null,
      businessHours: null,
      appliesTo: { channelIds: [], teamIds: [], priorities: [] },
      position: 0,
    })
    const b = await createPolicy(app, ws, { name: 'Urgent', firstResponseMinutes: 5, appliesTo: { priorities: ['urgent'] } })
    t.equal(b.position, 1, 'after the last by default')
    const first = await createPolicy(app, ws, { name: 'First', resolutionMinutes: 600, position: 0 })
    const list = await app.inject({ method: 'GET', url: '/sla-policies', headers: ws.agent.headers })
    t.equal(list.statusCode, 200)
    t.same(list.json().data.map((p: any) => p.name), ['Standard', 'First', 'Urgent'], 'by position, then createdAt')
    const up = await app.inject({ method: 'PATCH', url: `/sla-policies/${first.id}`, headers: ws.admin.headers, payload: { name: 'Renamed', nextResponseMinutes: 30 } })
    t.equal(up.statusCode, 200)
    t.match(up.json(), { name: 'Renamed', nextResponseMinutes: 30, resolutionMinutes: 600, position: 0 })
    const del = await app.inject({ method: 'DELETE', url: `/sla-policies/${first.id}`, headers: ws.owner.headers })
    t.equal(del.statusCode, 204)
    const again = await app.inject({ method: 'DELETE', url: `/sla-policies/${first.id}`, headers: ws.owner.headers })
    t.equal(again.json().code, 'SLA_POLICY_NOT_FOUND')
    const foreign = await app.inject({ method: 'PATCH', url: `/sla-policies/${a.id}`, headers: other.admin.headers, payload: { name: 'x' } })
    t.equal(foreign.statusCode, 404, "another workspace's policy is 404")
    const malformed = await app.inject({ method: 'PATCH', url: '/sla-policies/nope', headers: ws.admin.headers, payload: { name: 'x' } })
    t.equal(malformed.statusCode, 404)
  })

  await t.test('agents read but do not manage', async (t) => {
    const res = await app.inject({ method: 'POST', url: '/sla-policies', headers: ws.agent.headers, payload: { name: 'x', firstResponseMinutes: 1 } })
    t.equal(res.statusCode, 403)
    t.equal(res.json().code, 'FORBIDDEN')
    const anon = await app.inject({ method: 'GET', url: '/sla-policies' })
    t.equal(anon.statusCode, 401)
  })

  await t.test('validation: 400 VALIDATION_ERROR naming the field', async (t) => {
    const bad = async (payload: unknown, field: string) => {
      const res = await app.inject({ method: 'POST', url: '/sla-policies', headers: ws.admin.headers, payload: payload as object })
      t.equal(res.statusCode, 400, JSON.stringify(payload))
      t.equal(res.json().code, 'VALIDATION_ERROR')
      t.match(res.json().message, field)
    }
    await bad({ name: 'x' }, 'at least one')
    await bad({ name: 'x', firstResponseMinutes: null, resolutionMinutes: null }, 'at least one')
    await bad({ name: 'x', firstResponseMinutes: 0 }, 'firstResponseMinutes')
    await bad({ name: 'x', firstResponseMinutes: 525601 }, 'firstResponseMinutes')
    await bad({ name: 'x', firstResponseMinutes: '5' }, 'firstResponseMinutes')
    await bad({ name: '', firstResponseMinutes: 5 }, 'name')
    await bad({ name: 'x', firstResponseMinutes: 5, workspaceId: ws.workspaceId }, 'workspaceId')
    await bad({ name: 'x', firstResponseMinutes: 5, position: 10001 }, 'position')
    await bad({ name: 'x', firstResponseMinutes: 5, appliesTo: { priorities: ['huge'] } }, 'priorities')
    await bad({ name: 'x', firstResponseMinutes: 5, appliesTo: { channelIds: [other.channelId] } }, 'appliesTo.channelIds')
    await bad({ name: 'x', firstResponseMinutes: 5, appliesTo: { teamIds: ['0190a0a0-0000-7000-8000-000000000000'] } }, 'appliesTo.teamIds')
    await bad({ name: 'x', firstResponseMinutes: 5, businessHours: { timezone: 'UTC', days: { mon: [['09:00']] }, holidays: [] } }, 'businessHours')
    await bad({ name: 'x', firstResponseMinutes: 5, businessHours: { timezone: 'UTC', days: {}, holidays: Array(201).fill('2026-12-25') } }, 'holidays')
    const p = await createPolicy(app, ws, { name: 'Only one', firstResponseMinutes: 5 })
    const clear = await app.inject({ method: 'PATCH', url: `/sla-policies/${p.id}`, headers: ws.admin.headers, payload: { firstResponseMinutes: null } })
    t.equal(clear.statusCode, 400, 'a PATCH may not leave no target')
  })
})

t.test('matching: first by position whose lists all match, on create and on team/priority change; by hand it stays', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const team = await app.inject({ method: 'POST', url: '/teams', headers: ws.admin.headers, payload: { name: 'Billing' } })
  t.equal(team.statusCode, 201)
  const teamId = team.json().id

  const none = await startConversation(app, guest)
  t.equal(none.sla, null, 'no policy: sla null')

  const general = await createPolicy(app, ws, { name: 'General', firstResponseMinutes: 60, resolutionMinutes: 600, position: 10 })
  const urgent = await createPolicy(app, ws, { name: 'Urgent', firstResponseMinutes: 5, appliesTo: { priorities: ['urgent'] }, position: 0 })
  const billing = await createPolicy(app, ws, { name: 'Billing', firstResponseMinutes: 30, appliesTo: { teamIds: [teamId], channelIds: [ws.channelId] }, position: 1 })

  const c = await startConversation(app, guest)
  t.equal(c.sla, null, 'the visitor never sees the service level')
  let view = await getConversation(app, ws, c.id)
  t.match(view.sla, { policyId: general.id, policyName: 'General', status: 'ON_TRACK', breaches: [], nextResponseDueAt: null })
  const created = Date.parse(view.createdAt)
  t.ok(Math.abs(Date.parse(view.sla.firstResponseDueAt) - (created + 60 * 60_000)) < 5, 'first response due 60 minutes after creation')
  t.ok(Math.abs(Date.parse(view.sla.resolutionDueAt) - (created + 600 * 60_000)) < 5, 'resolution due 600 minutes after creation')

  view = (await patch(app, ws.agent.headers, c.id, 'priority', { priority: 'urgent' })).json()
  t.equal(view.sla.policyId, urgent.id, 'a priority change matches again')
  t.equal(view.sla.resolutionDueAt, null, 'not measured by this policy')
  t.ok(Math.abs(Date.parse(view.sla.firstResponseDueAt) - (created + 5 * 60_000)) < 5, 'recomputed from creation')

  view = (await patch(app, ws.agent.headers, c.id, 'priority', { priority: 'low' })).json()
  t.equal(view.sla.policyId, general.id)
  view = (await patch(app, ws.admin.headers, c.id, 'team', { teamId })).json()
  t.equal(view.sla.policyId, billing.id, 'a team change matches again')

  // By hand: the choice stays through later changes, until changed by hand.
  const bad = await patch(app, ws.agent.headers, c.id, 'sla', { policyId: '0190a0a0-0000-7000-8000-000000000000' })
  t.equal(bad.statusCode, 400)
  t.equal(bad.json().code, 'INVALID_SLA_POLICY')
  const malformed = await patch(app, ws.agent.headers, c.id, 'sla', { policyId: 'nope' })
  t.equal(malformed.json().code, 'INVALID_SLA_POLICY')
  const missing = await patch(app, ws.agent.headers, c.id, 'sla', {})
  t.equal(missing.json().code, 'VALIDATION_ERROR')
  view = (await patch(app, ws.agent.headers, c.id, 'sla', { policyId: general.id })).json()
  t.equal(view.sla.policyId, general.id)
  view = (await patch(app, ws.agent.headers, c.id, 'priority', { priority: 'urgent' })).json()
  t.equal(view.sla.policyId, general.id, 'a manual choice survives a priority change')
  view = (await patch(app, ws.agent.headers, c.id, 'sla', { policyId: null })).json()
  t.equal(view.sla, null, 'none by hand')
  view = (await patch(app, ws.agent.headers, c.id, 'priority', { priority: 'high' })).json()
  t.equal(view.sla, null, 'and none stays')

  // Deleting a policy removes it from its conversations.
  const d = await startConversation(app, guest)
  t.equal((await getConversation(app, ws, d.id)).sla.policyId, general.id)
  t.equal((await app.inject({ method: 'DELETE', url: `/sla-policies/${general.id}`, headers: ws.admin.headers })).statusCode, 204)
  t.equal((await getConversation(app, ws, d.id)).sla, null)
  const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sla_targets WHERE conversation_id = ${d.id}`
  t.equal(n, 0, 'its targets are gone')
})

t.test('deleting a team matches its conversations again (their team changed); a hand choice stays', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const teamId = (await app.inject({ method: 'POST', url: '/teams', headers: ws.admin.headers, payload: { name: 'Tier 2' } })).json().id
  const general = await createPolicy(app, ws, { name: 'General', resolutionMinutes: 600, position: 10 })
  const tier2 = await createPolicy(app, ws, { name: 'Tier 2', firstResponseMinutes: 15, appliesTo: { teamIds: [teamId] }, position: 0 })
  const auto = await startConversation(app, guest)
  const manual = await startConversation(app, guest)
  t.equal((await patch(app, ws.admin.headers, auto.id, 'team', { teamId })).json().sla.policyId, tier2.id)
  await patch(app, ws.admin.headers, manual.id, 'team', { teamId })
  t.equal((await patch(app, ws.agent.headers, manual.id, 'sla', { policyId: tier2.id })).json().sla.policyId, tier2.id)
  t.equal((await app.inject({ method: 'DELETE', url: `/teams/${teamId}`, headers: ws.admin.headers })).statusCode, 204)
  const a = await getConversation(app, ws, auto.id)
  t.equal(a.teamId, null)
  t.equal(a.sla.policyId, general.id, 'matched again without a team')
  t.equal(a.sla.firstResponseDueAt, null)
  t.ok(a.sla.resolutionDueAt !== null)
  t.equal((await getConversation(app, ws, manual.id)).sla.policyId, tier2.id, 'the hand choice stays')
})
