import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { startConversation } from '../conversations/fixtures.js'

const { app } = await build(t)
const ws = await seedWorkspace(app, 'Acme')
const other = await seedWorkspace(app, 'Other')
const sql = app.deps.sql

const create = (headers: Record<string, string>, payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: '/canned-responses', headers, payload })
const list = (headers: Record<string, string>, query = '') => app.inject({ method: 'GET', url: `/canned-responses${query}`, headers })

t.test('scopes and permissions: any member creates personal ones, canned:manage workspace ones', async (t) => {
  const personal = await create(ws.agent.headers, { shortcut: 'my-hello', body: 'Hello from me', scope: 'personal' })
  let team: Awaited<ReturnType<typeof create>>

  await t.test('creating: personal by any member, workspace with canned:manage (403 without, 400 first)', async (t) => {
    t.equal(personal.statusCode, 201)
    t.match(personal.json(), { shortcut: 'my-hello', title: '', scope: 'personal', ownerId: ws.agent.userId, channelIds: [], usageCount: 0 })

    const denied = await create(ws.agent.headers, { shortcut: 'team', body: 'x', scope: 'workspace' })
    t.equal(denied.statusCode, 403)
    t.equal(denied.json().code, 'FORBIDDEN')
    const invalidFirst = await create(ws.agent.headers, { shortcut: 'Team!', body: 'x', scope: 'workspace' })
    t.equal(invalidFirst.statusCode, 400, 'validation before the scope-dependent permission')

    team = await create(ws.admin.headers, { shortcut: 'team', title: 'Team hello', body: 'Hi {{visitor.name}}', scope: 'workspace', channelIds: [ws.channelId] })
    t.equal(team.statusCode, 201)
    t.equal(team.json().ownerId, ws.admin.userId, 'ownerId is the creator, for workspace ones too')
    t.same(team.json().channelIds, [ws.channelId])
  })

  await t.test("listing: a member sees the workspace's and its own, filtered by scope, channel and q", async (t) => {
    // The agent sees the workspace one and its own; the owner does not see the agent's personal one.
    const agentList = (await list(ws.agent.headers)).json().data.map((r: { shortcut: string }) => r.shortcut)
    t.same(agentList, ['my-hello', 'team'])
    const ownerList = (await list(ws.owner.headers)).json().data.map((r: { shortcut: string }) => r.shortcut)
    t.same(ownerList, ['team'])
    t.same((await list(ws.agent.headers, '?scope=personal')).json().data.map((r: { shortcut: string }) => r.shortcut), ['my-hello'])
    t.same((await list(other.owner.headers)).json().data, [], 'another workspace sees nothing')
    for (const query of ['?scope=workspace', `?scope=workspace&channelId=${ws.channelId}`, `?scope=personal&q=my`, '?scope=workspace&q=te']) {
      const res = await list(ws.agent.headers, query)
      t.equal(res.statusCode, 200, query)
    }
    t.same((await list(ws.agent.headers, '?scope=workspace')).json().data.map((r: { shortcut: string }) => r.shortcut), ['team'])
  })

  const id = personal.json().id

  await t.test("changing: another member's personal one is 404, a workspace one needs canned:manage", async (t) => {
    const byOwner = await app.inject({ method: 'PATCH', url: `/canned-responses/${id}`, headers: ws.owner.headers, payload: { body: 'mine now' } })
    t.equal(byOwner.statusCode, 404, "another member's personal response is 404, even for the owner")
    t.equal((await app.inject({ method: 'DELETE', url: `/canned-responses/${id}`, headers: other.owner.headers })).statusCode, 404)
    const agentOnTeam = await app.inject({ method: 'PATCH', url: `/canned-responses/${team.json().id}`, headers: ws.agent.headers, payload: { body: 'changed' } })
    t.equal(agentOnTeam.statusCode, 403, 'a workspace response needs canned:manage')
    const [row] = await sql`SELECT body FROM canned_responses WHERE id = ${team.json().id}`
    t.equal(row!.body, 'Hi {{visitor.name}}', 'unchanged')
  })

  await t.test('its owner patches and deletes a personal one; then, and for a malformed id, 404', async (t) => {
    const patched = await app.inject({ method: 'PATCH', url: `/canned-responses/${id}`, headers: ws.agent.headers, payload: { title: 'Mine', channelIds: [] } })
    t.equal(patched.statusCode, 200)
    t.match(patched.json(), { title: 'Mine', body: 'Hello from me' })
    t.equal((await app.inject({ method: 'DELETE', url: `/canned-responses/${id}`, headers: ws.agent.headers })).statusCode, 204)
    t.equal((await app.inject({ method: 'DELETE', url: `/canned-responses/${id}`, headers: ws.agent.headers })).statusCode, 404)
    t.equal((await app.inject({ method: 'PATCH', url: '/canned-responses/not-a-uuid', headers: ws.agent.headers, payload: {} })).statusCode, 404)
  })
})

t.test('shortcuts: unique per workspace and per member, separately', async (t) => {
  t.equal((await create(ws.admin.headers, { shortcut: 'refund', body: 'Workspace refund', scope: 'workspace' })).statusCode, 201)
  const clash = await create(ws.owner.headers, { shortcut: 'refund', body: 'Another', scope: 'workspace' })
  t.equal(clash.statusCode, 409)
  t.equal(clash.json().code, 'SHORTCUT_TAKEN')
  t.equal((await create(ws.agent.headers, { shortcut: 'refund', body: 'My refund', scope: 'personal' })).statusCode, 201, 'a personal one may equal a workspace one')
  t.equal((await create(ws.agent.headers, { shortcut: 'refund', body: 'Again', scope: 'personal' })).statusCode, 409)
  t.equal((await create(ws.owner.headers, { shortcut: 'refund', body: 'Owner own', scope: 'personal' })).statusCode, 201, "another member's personal shortcut is theirs")
  t.equal((await create(other.owner.headers, { shortcut: 'refund', body: 'Other ws', scope: 'workspace' })).statusCode, 201)

  const mine = await create(ws.agent.headers, { shortcut: 'ship', body: 'Shipping', scope: 'personal' })
  const rename = await app.inject({ method: 'PATCH', url: `/canned-responses/${mine.json().id}`, headers: ws.agent.headers, payload: { shortcut: 'refund' } })
  t.equal(rename.statusCode, 409)
  const [row] = await sql`SELECT shortcut FROM canned_responses WHERE id = ${mine.json().id}`
  t.equal(row!.shortcut, 'ship')
})

t.test('hostile input: 400s with the contract body', async (t) => {
  for (const payload of [
    { shortcut: '-x', body: 'b', scope: 'personal' },
    { shortcut: 'a'.repeat(33), body: 'b', scope: 'personal' },
    { shortcut: 'ok', body: '', scope: 'personal' },
    { shortcut: 'ok', body: 'x'.repeat(5001), scope: 'personal' },
    { shortcut: 'ok', body: 'b', title: 't'.repeat(201), scope: 'personal' },
    { shortcut: 'ok', body: 'b', scope: 'team' },
    { shortcut: 'ok', body: 'b', scope: 'personal', ownerId: 'x' },
    { shortcut: 'ok', body: 'b', scope: 'personal', usageCount: 99 },
  ]) {
    const res = await create(ws.agent.headers, payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 80))
    t.equal(res.json().code, 'VALIDATION_ERROR')
  }
  const foreign = await create(ws.admin.headers, { shortcut: 'foreign', body: 'b', scope: 'workspace', channelIds: [other.channelId] })
  t.equal(foreign.statusCode, 400)
  t.equal(foreign.json().code, 'INVALID_CHANNEL')
  const [{ n }] = await sql`SELECT count(*)::int AS n FROM canned_responses WHERE shortcut = 'foreign'`
  t.equal(n, 0)
  t.equal((await list(ws.agent.headers, '?q=')).statusCode, 400)
  t.equal((await list(ws.agent.headers, `?q=${'x'.repeat(101)}`)).statusCode, 400)
  t.equal((await list(ws.agent.headers, '?cursor=abc')).json().code, 'INVALID_CURSOR')
  t.equal((await list(ws.agent.headers, '?unknown=1')).statusCode, 400)
})

t.test('the picker: prefix, then substring, then title/body; each by usage then newest; channel limits', async (t) => {
  const w = await seedWorkspace(app, 'Picker')
  const second = await app.inject({ method: 'POST', url: '/channels', headers: w.owner.headers, payload: { name: 'Shop' } })
  const shopId = second.json().id
  const mk = async (shortcut: string, body: string, usage: number, extra: Record<string, unknown> = {}) => {
    const res = await create(w.admin.headers, { shortcut, body, scope: 'workspace', ...extra })
    t.equal(res.statusCode, 201, shortcut)
    await sql`UPDATE canned_responses SET usage_count = ${usage} WHERE id = ${res.json().id}`
    return res.json().id
  }
  await mk('ret-old', 'Returns', 1)
  await mk('ret-new', 'Returns again', 1)
  await mk('return', 'Return policy', 5)
  await mk('xret', 'Substring one', 9)
  await mk('hello', 'About your RETURN', 50, { title: '' })
  await mk('bye', 'Bye', 0, { title: 'Ret-urn? no: Retention' })
  await mk('shop-ret', 'Shop only', 0, { channelIds: [shopId] })
  await mk('zzz', 'nothing here', 100)

  const q = async (query: string) => {
    const res = await list(w.agent.headers, query)
    t.equal(res.statusCode, 200, `${query}: ${res.body.slice(0, 200)}`)
    return res.json().data?.map((r: { shortcut: string }) => r.shortcut)
  }
  t.same(await q('?q=ret'), ['return', 'ret-new', 'ret-old', 'xret', 'shop-ret', 'hello', 'bye'])
  t.same(await q('?q=RET'), ['return', 'ret-new', 'ret-old', 'xret', 'shop-ret', 'hello', 'bye'], 'case-insensitive')
  t.same(await q(`?q=ret&channelId=${w.channelId}`), ['return', 'ret-new', 'ret-old', 'xret', 'hello', 'bye'], 'limited to another channel: not offered')
  t.same(await q(`?q=ret&channelId=${shopId}`), ['return', 'ret-new', 'ret-old', 'xret', 'shop-ret', 'hello', 'bye'])
  t.same(await q('?q=r'), ['return', 'ret-new', 'ret-old', 'xret', 'shop-ret', 'zzz', 'hello', 'bye'], 'one character: no trigram, same ranking')
  t.same(await q('?q=your%20return'), ['hello'], 'a phrase matches the body')
  t.same(await q('?q=100%25'), [], 'LIKE wildcards are literal')
  t.same(await q('?q=_'), [], 'an underscore is literal')

  // Pages follow the ranking across groups, each item once.
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res = await list(w.agent.headers, `?q=ret&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
    t.equal(res.statusCode, 200, res.body)
    seen.push(...res.json().data.map((r: { shortcut: string }) => r.shortcut))
    cursor = res.json().nextCursor
  } while (cursor)
  t.same(seen, ['return', 'ret-new', 'ret-old', 'xret', 'shop-ret', 'hello', 'bye'])
  const page1 = (await list(w.agent.headers, '?q=ret&limit=2')).json()
  t.equal((await list(w.agent.headers, `?q=re&limit=2&cursor=${page1.nextCursor}`)).json().code, 'INVALID_CURSOR', 'a cursor belongs to its q')
})

t.test('render: variables from the conversation, fallbacks, missing, one use counted atomically', async (t) => {
  const guest = await seedGuest(app, ws, 'Gina Guest', '')
  const conv = await startConversation(app, guest)
  const res = await create(ws.admin.headers, {
    shortcut: 'greet',
    body: 'Hi {{visitor.name}} <{{visitor.email | "no mail"}}>, {{agent.name}} of {{channel.name}} on {{conversation.id}} {{visitor.phone}}',
    scope: 'workspace',
    channelIds: [ws.channelId],
  })
  const id = res.json().id
  const render = (headers: Record<string, string>, conversationId: string) =>
    app.inject({ method: 'POST', url: `/canned-responses/${id}/render`, headers, payload: { conversationId } })
  const out = await render(ws.agent.headers, conv.id)
  t.equal(out.statusCode, 200)
  t.same(out.json(), { body: `Hi Gina Guest <no mail>, Agnes Agent of Website on ${conv.id} {{visitor.phone}}`, missing: ['visitor.email'] })

  await Promise.all(Array.from({ length: 10 }, () => render(ws.agent.headers, conv.id)))
  const [row] = await sql`SELECT usage_count FROM canned_responses WHERE id = ${id}`
  t.equal(row!.usage_count, 11, 'every concurrent render counted')

  const otherConv = await startConversation(app, await seedGuest(app, other))
  const foreign = await render(ws.agent.headers, otherConv.id)
  t.equal(foreign.statusCode, 404)
  t.equal(foreign.json().code, 'CONVERSATION_NOT_FOUND')
  t.equal((await render(ws.agent.headers, 'nope')).statusCode, 404)
  t.equal((await render(other.owner.headers, otherConv.id)).json().code, 'CANNED_RESPONSE_NOT_FOUND')
  const [after] = await sql`SELECT usage_count FROM canned_responses WHERE id = ${id}`
  t.equal(after!.usage_count, 11, 'a refused render counts nothing')
})
