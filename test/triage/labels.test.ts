import { randomUUID } from 'node:crypto'
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { rooms } from '../../src/events.js'
import { listenEvents, startConversation } from '../conversations/fixtures.js'

/** Labels and priority (API.md section 17) through HTTP, checked against the rows. */

t.test('labels: create, list by name, rename, LABEL_NAME_TAKEN, permission, delete leaves every conversation', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const create = (headers: Record<string, string>, payload: object) => app.inject({ method: 'POST', url: '/labels', headers, payload })

  const vip = await create(ws.admin.headers, { name: 'VIP', color: '#FF0000', description: 'big customers' })
  t.equal(vip.statusCode, 201, vip.body)
  t.match(vip.json(), { name: 'VIP', color: '#ff0000', description: 'big customers' })
  const bug = (await create(ws.owner.headers, { name: 'bug', color: '#00ff00' })).json()
  t.equal(bug.description, '')

  const dup = await create(ws.admin.headers, { name: 'vip', color: '#000000' })
  t.equal(dup.statusCode, 409)
  t.equal(dup.json().code, 'LABEL_NAME_TAKEN')
  // Another workspace may use the name.
  t.equal((await create(other.admin.headers, { name: 'VIP', color: '#000000' })).statusCode, 201)

  const byAgent = await create(ws.agent.headers, { name: 'nope', color: '#000000' })
  t.equal(byAgent.statusCode, 403, 'labels:manage is owner and admin only')
  t.equal((await create(ws.admin.headers, { name: 'x', color: 'red' })).statusCode, 400)
  t.equal((await create(ws.admin.headers, { name: 'x'.repeat(51), color: '#000000' })).statusCode, 400)

  const list = await app.inject({ method: 'GET', url: '/labels', headers: ws.agent.headers })
  t.equal(list.statusCode, 200)
  t.same(list.json().data.map((l: { name: string }) => l.name), ['bug', 'VIP'], 'by name, case-insensitive; own workspace only')

  const renameClash = await app.inject({ method: 'PATCH', url: `/labels/${bug.id}`, headers: ws.admin.headers, payload: { name: 'Vip' } })
  t.equal(renameClash.json().code, 'LABEL_NAME_TAKEN')
  const foreign = await app.inject({ method: 'PATCH', url: `/labels/${bug.id}`, headers: other.admin.headers, payload: { name: 'mine' } })
  t.equal(foreign.statusCode, 404)

  // Labelling a conversation.
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)
  t.same(conv.labels, [])
  t.equal(conv.priority, null)
  t.equal(conv.snoozedUntil, null)
  const put = (headers: Record<string, string>, labelIds: string[]) =>
    app.inject({ method: 'PUT', url: `/conversations/${conv.id}/labels`, headers, payload: { labelIds } })
  const set = await put(ws.agent.headers, [vip.json().id, bug.id])
  t.equal(set.statusCode, 200, set.body)
  t.same(set.json().labels.map((l: { name: string }) => l.name), ['bug', 'VIP'], 'labels by name')
  t.same(set.json().labels[1], { id: vip.json().id, name: 'VIP', color: '#ff0000' })

  const otherLabel = (await app.inject({ method: 'GET', url: '/labels', headers: other.admin.headers })).json().data[0].id
  for (const bad of [[otherLabel], [randomUUID()], ['not-a-uuid'], [bug.id, bug.id]]) {
    const res = await put(ws.agent.headers, bad)
    t.equal(res.statusCode, 400, `bad labelIds ${JSON.stringify(bad)}`)
    t.equal(res.json().code, 'INVALID_LABEL')
  }
  const many = []
  for (let i = 0; i < 21; i++) many.push((await create(ws.admin.headers, { name: `l${i}`, color: '#123456' })).json().id)
  t.equal((await put(ws.agent.headers, many)).json().code, 'INVALID_LABEL', '21 labels')
  t.equal((await put(ws.agent.headers, many.slice(0, 20))).statusCode, 200, '20 labels')
  t.equal((await put(ws.agent.headers, [vip.json().id, bug.id])).statusCode, 200)
  t.equal((await app.inject({ method: 'PUT', url: `/conversations/${conv.id}/labels`, headers: other.agent.headers, payload: { labelIds: [] } })).statusCode, 404)
  t.equal((await app.inject({ method: 'PUT', url: `/conversations/${conv.id}/labels`, headers: guest.headers, payload: { labelIds: [] } })).statusCode, 401, "a visitor session is not a member credential")

  // Renamed: every conversation shows the new name.
  await app.inject({ method: 'PATCH', url: `/labels/${bug.id}`, headers: ws.admin.headers, payload: { name: 'Defect', color: '#0000FF' } })
  const got = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}`, headers: ws.agent.headers })).json()
  t.same(got.labels.map((l: { name: string; color: string }) => [l.name, l.color]), [['Defect', '#0000ff'], ['VIP', '#ff0000']])

  const del = await app.inject({ method: 'DELETE', url: `/labels/${bug.id}`, headers: ws.admin.headers })
  t.equal(del.statusCode, 204)
  const [row] = await app.deps.sql<{ labelIds: string[] }[]>`SELECT label_ids::text[] AS "labelIds" FROM conversations WHERE id = ${conv.id}`
  t.same(row.labelIds, [vip.json().id], 'the deleted label left the row')
  t.equal((await app.inject({ method: 'DELETE', url: `/labels/${bug.id}`, headers: ws.admin.headers })).statusCode, 404)
})

t.test('at most 500 labels per workspace, even when created concurrently', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  await app.deps.sql`
    INSERT INTO labels (id, workspace_id, name, color)
    SELECT gen_random_uuid(), ${ws.workspaceId}, 'pre' || i, '#000000' FROM generate_series(1, 498) i`
  const results = await Promise.all(
    [0, 1, 2, 3].map((i) => app.inject({ method: 'POST', url: '/labels', headers: ws.admin.headers, payload: { name: `n${i}`, color: '#000000' } })),
  )
  t.same(results.map((r) => r.statusCode).sort(), [201, 201, 409, 409])
  t.ok(results.some((r) => r.json().code === 'TOO_MANY_LABELS'))
  const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM labels WHERE workspace_id = ${ws.workspaceId}`
  t.equal(n, 500)
})

t.test('priority: set, clear, validated, event', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const conv = await startConversation(app, await seedGuest(app, ws))
  const patch = (payload: unknown) => app.inject({ method: 'PATCH', url: `/conversations/${conv.id}/priority`, headers: ws.agent.headers, payload: payload as object })
  const urgent = await patch({ priority: 'urgent' })
  t.equal(urgent.statusCode, 200)
  t.equal(urgent.json().priority, 'urgent')
  const [row] = await app.deps.sql`SELECT priority, priority_rank AS rank FROM conversations WHERE id = ${conv.id}`
  t.same({ ...row }, { priority: 'urgent', rank: 4 })
  t.equal((await patch({ priority: 'critical' })).statusCode, 400)
  t.equal((await patch({})).statusCode, 400, 'priority is required (null clears)')
  const cleared = await patch({ priority: null })
  t.equal(cleared.json().priority, null)
})

t.test('labels and priority are the team’s: a visitor sees none, in its reads and its events', async (t) => {
  const { app, redisPrefix } = await build(t)
  const events = await listenEvents(t, redisPrefix)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const conv = await startConversation(app, guest)
  const label = (await app.inject({ method: 'POST', url: '/labels', headers: ws.admin.headers, payload: { name: 'Abusive', color: '#ff0000' } })).json()
  await app.inject({ method: 'PUT', url: `/conversations/${conv.id}/labels`, headers: ws.agent.headers, payload: { labelIds: [label.id] } })
  await events.settle()
  events.clear()
  await app.inject({ method: 'PATCH', url: `/conversations/${conv.id}/priority`, headers: ws.agent.headers, payload: { priority: 'urgent' } })
  const member = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}`, headers: ws.agent.headers })).json()
  t.match(member, { labels: [{ name: 'Abusive' }], priority: 'urgent' })
  const visitor = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}`, headers: guest.headers })).json()
  t.match(visitor, { id: conv.id, labels: [], priority: null })
  const history = (await app.inject({ method: 'GET', url: `/conversations/guest/${guest.guestId}/history`, headers: guest.headers })).json()
  t.same(history.data[0].labels, [])
  t.equal(history.data[0].priority, null)
  const seen = (await app.inject({ method: 'PATCH', url: `/conversations/${conv.id}/mark-seen`, headers: guest.headers })).json()
  t.same([seen.labels, seen.priority], [[], null], "the visitor's mark-seen answer")
  const toGuest = await events.waitFor((e) => e.event === 'conversation:updated' && e.rooms.includes(rooms.guest(guest.guestId)))
  t.same([toGuest.payload.conversation.labels, toGuest.payload.conversation.priority], [[], null], 'the guest room’s event')
  const toMembers = await events.waitFor((e) => e.event === 'conversation:updated' && e.rooms.includes(rooms.workspace(ws.workspaceId)))
  t.equal(toMembers.payload.conversation.priority, 'urgent', 'the members’ event')
  t.notOk(toGuest.rooms.includes(rooms.workspace(ws.workspaceId)), 'two publishes, one per audience')
  const download = async (headers: Record<string, string>) =>
    JSON.parse((await app.inject({ method: 'GET', url: `/conversations/${conv.id}/download?format=json`, headers })).body).conversation
  t.match(await download(ws.agent.headers), { labels: [{ name: 'Abusive' }], priority: 'urgent' }, "the members' transcript")
  t.match(await download(guest.headers), { labels: [], priority: null }, "the visitor's transcript")
})
