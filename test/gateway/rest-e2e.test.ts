// End to end: a visitor and an agent talk through the REST API (app.inject on a real app) while
// members and visitors listen on two real gateway processes sharing one Redis.
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { connect, next, record, startGateway, testDatabaseAndPrefix } from './fixtures.js'

const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
const [{ app }, gw1, gw2] = await Promise.all([
  build(t, { databaseUrl, env: { REDIS_PREFIX: redisPrefix } }),
  startGateway(t, { databaseUrl, redisPrefix }),
  startGateway(t, { databaseUrl, redisPrefix }),
])
const acme = await seedWorkspace(app, 'Acme')
const other = await seedWorkspace(app, 'Other')
const gina = await seedGuest(app, acme, 'Gina')
const hugo = await seedGuest(app, acme, 'Hugo')

t.test('a visitor message sent through REST reaches members on either gateway within the second, and nobody else', async (t) => {
  const agentOn1 = await connect(t, gw1.url, { token: acme.agent.token, workspaceId: acme.workspaceId })
  const adminOn2 = await connect(t, gw2.url, { token: acme.admin.token, workspaceId: acme.workspaceId })
  const ginaOn2 = await connect(t, gw2.url, { visitorSession: gina.session })
  const hugoOn1 = await connect(t, gw1.url, { visitorSession: hugo.session })
  const outsiderOn1 = await connect(t, gw1.url, { token: other.owner.token, workspaceId: other.workspaceId })
  const leakedToHugo = record(hugoOn1, 'message:new')
  const leakedToOutsider = record(outsiderOn1, 'message:new')
  const leakedUpdates = record(outsiderOn1, 'conversation:updated')

  const created = await app.inject({ method: 'POST', url: '/conversations', headers: gina.headers, payload: { channelId: gina.channelId, guestId: gina.guestId } })
  t.equal(created.statusCode, 201)
  const conversationId = created.json().id

  const sentAt = Date.now()
  const toAgent = next<{ conversationId: string; message: { body: string } }>(agentOn1, 'message:new', (p) => p.conversationId === conversationId)
  const toAdmin = next<{ conversationId: string; message: { body: string } }>(adminOn2, 'message:new', (p) => p.conversationId === conversationId)
  const res = await app.inject({ method: 'POST', url: `/conversations/${conversationId}/messages`, headers: gina.headers, payload: { body: 'Hello, my order is late' } })
  t.equal(res.statusCode, 201)
  const [a, b] = await Promise.all([toAgent, toAdmin])
  const latency = Date.now() - sentAt
  t.equal(a.message.body, 'Hello, my order is late')
  t.equal(b.message.body, 'Hello, my order is late')
  t.ok(latency < 1000, `members on both gateways had it ${latency} ms after the request`)

  // Gina also gets her own message back (other tabs of hers show it): wait for the agent's.
  const toGina = next<{ conversationId: string; message: { body: string; senderType: string } }>(
    ginaOn2,
    'message:new',
    (p) => p.conversationId === conversationId && p.message.senderType === 'AGENT',
  )
  const reply = await app.inject({ method: 'POST', url: `/conversations/${conversationId}/messages`, headers: acme.agent.headers, payload: { body: 'Sorry! Looking into it.' } })
  t.equal(reply.statusCode, 201)
  t.match(await toGina, { message: { body: 'Sorry! Looking into it.', senderType: 'AGENT' } })

  // A barrier: once this later event reached Hugo's and the outsider's own rooms, the earlier
  // ones would have too, had they been sent there.
  const barrierHugo = next(hugoOn1, 'conversation:updated')
  const hugoConv = await app.inject({ method: 'POST', url: '/conversations', headers: hugo.headers, payload: { channelId: hugo.channelId, guestId: hugo.guestId } })
  t.equal(hugoConv.statusCode, 201)
  await barrierHugo
  t.same(leakedToHugo, [], "another guest of the same workspace received none of Gina's messages")
  t.same(leakedToOutsider, [], 'a member of another workspace received nothing')
  t.same(leakedUpdates, [], 'nor any conversation update')
})
