import t from 'tap'
import { build, seedWorkspace } from '../helper.js'

t.test('POST /channels', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const res = await app.inject({
    method: 'POST',
    url: '/channels',
    headers: ws.admin.headers,
    payload: { name: 'Shop', allowedOrigins: ['https://Shop.Example.com', 'http://localhost:8080', 'https://shop.example.com:443'], requireChannelToken: true },
  })
  t.equal(res.statusCode, 201)
  const ch = res.json()
  t.same(Object.keys(ch).sort(), ['active', 'allowedOrigins', 'channelToken', 'createdAt', 'defaultTeamId', 'id', 'identitySecret', 'kind', 'name', 'requireChannelToken', 'widget'])
  t.match(ch, { name: 'Shop', kind: 'web', active: true, requireChannelToken: true, channelToken: /^ct_.{20,}/, identitySecret: /^is_[0-9a-f]{64}$/ })
  t.same(ch.allowedOrigins, ['https://shop.example.com', 'http://localhost:8080'], 'stored as browsers send Origin, deduplicated')
  const plain = (await app.inject({ method: 'POST', url: '/channels', headers: ws.owner.headers, payload: { name: 'Plain' } })).json()
  t.match(plain, { allowedOrigins: [], requireChannelToken: false, active: true })
  t.not(plain.channelToken, ch.channelToken)
  t.not(plain.identitySecret, ch.identitySecret)

  const agent = await app.inject({ method: 'POST', url: '/channels', headers: ws.agent.headers, payload: { name: 'X' } })
  t.same([agent.statusCode, agent.json().code], [403, 'FORBIDDEN'], 'agents lack channels:manage')
  for (const [payload, message] of [
    [{}, /missing field 'name'/],
    [{ name: '' }, /name/],
    [{ name: 'X', allowedOrigins: ['https://shop.example.com/path'] }, /allowedOrigins/],
    [{ name: 'X', allowedOrigins: ['*'] }, /allowedOrigins/],
    [{ name: 'X', allowedOrigins: [42] }, /allowedOrigins/],
    [{ name: 'X', requireChannelToken: 'yes' }, /requireChannelToken/],
    [{ name: 'X', channelToken: 'mine' }, /unknown field 'channelToken'/],
    [{ name: 'X', workspaceId: ws.workspaceId }, /unknown field 'workspaceId'/],
  ] as const) {
    const r = await app.inject({ method: 'POST', url: '/channels', headers: ws.owner.headers, payload })
    t.equal(r.statusCode, 400, JSON.stringify(payload))
    t.match(r.json(), { code: 'VALIDATION_ERROR', message })
  }
})

t.test('GET /channels: identitySecret only for channels:manage', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const asAgent = await app.inject({ method: 'GET', url: '/channels', headers: ws.agent.headers })
  t.equal(asAgent.statusCode, 200)
  const [seeded] = asAgent.json().data
  t.equal(asAgent.json().data.length, 1, "only this workspace's channels")
  t.match(seeded, { id: ws.channelId, channelToken: ws.channelToken })
  t.notOk('identitySecret' in seeded, 'agent does not see the identity secret')
  t.notMatch(asAgent.body, ws.identitySecret)
  const asAdmin = (await app.inject({ method: 'GET', url: '/channels', headers: ws.admin.headers })).json()
  t.equal(asAdmin.data[0].identitySecret, ws.identitySecret)
  t.notMatch(JSON.stringify(asAdmin), other.channelId)
  const cross = await app.inject({ method: 'GET', url: '/channels', headers: { ...other.owner.headers, 'x-workspace-id': ws.workspaceId } })
  t.same([cross.statusCode, cross.json().code], [403, 'NOT_A_MEMBER'])
})

t.test('PATCH /channels/:id and rotate-token', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const other = await seedWorkspace(app, 'Other')
  const url = `/channels/${ws.channelId}`
  const res = await app.inject({ method: 'PATCH', url, headers: ws.admin.headers, payload: { name: 'Renamed', allowedOrigins: ['https://a.example'], requireChannelToken: true, active: false } })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { id: ws.channelId, name: 'Renamed', allowedOrigins: ['https://a.example'], requireChannelToken: true, active: false, channelToken: ws.channelToken, identitySecret: ws.identitySecret })
  const partial = await app.inject({ method: 'PATCH', url, headers: ws.owner.headers, payload: { active: true } })
  t.match(partial.json(), { name: 'Renamed', active: true, requireChannelToken: true })
  t.equal((await app.inject({ method: 'PATCH', url, headers: ws.agent.headers, payload: { name: 'no' } })).statusCode, 403, 'agent')
  for (const [payload, message] of [
    [{}, /fewer than 1|body/],
    [{ kind: 'email' }, /unknown field 'kind'/],
    [{ channelToken: 'x' }, /unknown field 'channelToken'/],
    [{ active: 'no' }, /active/],
  ] as const) {
    const r = await app.inject({ method: 'PATCH', url, headers: ws.owner.headers, payload })
    t.equal(r.statusCode, 400, JSON.stringify(payload))
    t.match(r.json().message, message)
  }
  for (const id of [other.channelId, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
    const r = await app.inject({ method: 'PATCH', url: `/channels/${id}`, headers: ws.owner.headers, payload: { name: 'Hijack' } })
    t.same([r.statusCode, r.json().code], [404, 'CHANNEL_NOT_FOUND'], `PATCH ${id}`)
    const rot = await app.inject({ method: 'POST', url: `/channels/${id}/rotate-token`, headers: ws.owner.headers })
    t.same([rot.statusCode, rot.json().code], [404, 'CHANNEL_NOT_FOUND'], `rotate ${id}`)
  }
  const [otherRow] = await app.deps.sql`SELECT name, channel_token FROM channels WHERE id = ${other.channelId}`
  t.same([otherRow.name, otherRow.channel_token], ['Website', other.channelToken], "the other workspace's channel is untouched")

  // Rotation: the new token works for POST /auth, the old one no longer does.
  const rotated = await app.inject({ method: 'POST', url: `${url}/rotate-token`, headers: ws.admin.headers })
  t.equal(rotated.statusCode, 200)
  const fresh = rotated.json().channelToken
  t.not(fresh, ws.channelToken)
  t.equal(rotated.json().identitySecret, ws.identitySecret, 'the identity secret is not rotated with it')
  t.equal((await app.inject({ method: 'POST', url: `${url}/rotate-token`, headers: ws.agent.headers })).statusCode, 403, 'agent cannot rotate')
  const boot = (token: string) =>
    app.inject({ method: 'POST', url: '/auth', headers: { 'x-channel-token': token }, payload: { channelId: ws.channelId, name: 'G', email: 'g@example.test' } })
  t.equal((await boot(ws.channelToken)).statusCode, 401, 'old token refused')
  t.equal((await boot(fresh)).statusCode, 201, 'new token accepted')
})
