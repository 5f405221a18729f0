// Real sockets: a private note and its mention through the REST API (app.inject on a real app)
// and a real gateway process. The visitor's socket receives nothing of the note; mention:new
// reaches the mentioned member's sockets only.
import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { connect, next, record, startGateway, testDatabaseAndPrefix } from '../gateway/fixtures.js'

const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
const [{ app }, gw] = await Promise.all([build(t, { databaseUrl, env: { REDIS_PREFIX: redisPrefix } }), startGateway(t, { databaseUrl, redisPrefix })])
const acme = await seedWorkspace(app, 'Acme')
const gina = await seedGuest(app, acme, 'Gina')

t.test('a visitor socket receives nothing of a private note; mention:new reaches the mentioned member only', async (t) => {
  const created = await app.inject({ method: 'POST', url: '/conversations', headers: gina.headers, payload: { channelId: gina.channelId, guestId: gina.guestId } })
  const conversationId = created.json().id
  const ginaSocket = await connect(t, gw.url, { visitorSession: gina.session })
  const admin = await connect(t, gw.url, { token: acme.admin.token, workspaceId: acme.workspaceId })
  const agent = await connect(t, gw.url, { token: acme.agent.token, workspaceId: acme.workspaceId })
  const owner = await connect(t, gw.url, { token: acme.owner.token, workspaceId: acme.workspaceId })
  const ginaAll: string[] = []
  ginaSocket.onAny((event: string) => ginaAll.push(event))
  const ginaMessages = record<{ message: { body: string } }>(ginaSocket, 'message:new')
  const mentionsToOwner = record(owner, 'mention:new')
  const mentionsToAgent = record(agent, 'mention:new')

  const adminGetsNote = next<{ message: { body: string; private: boolean } }>(admin, 'message:new', (p) => p.message.private)
  const adminMention = next<{ mention: { conversationId: string; byUserId: string; excerpt: string } }>(admin, 'mention:new')
  const res = await app.inject({
    method: 'POST',
    url: `/conversations/${conversationId}/messages`,
    headers: acme.agent.headers,
    payload: { body: 'SECRET: VIP customer, @admin please check', private: true, mentions: [acme.admin.userId, acme.agent.userId] },
  })
  t.equal(res.statusCode, 201)
  t.match((await adminGetsNote).message, { body: 'SECRET: VIP customer, @admin please check', private: true })
  t.match((await adminMention).mention, { conversationId, byUserId: acme.agent.userId, excerpt: 'SECRET: VIP customer, @admin please check' })

  // Barrier: a public reply reaches Gina after the note would have.
  const barrier = next<{ message: { body: string } }>(ginaSocket, 'message:new', (p) => p.message.body === 'Public reply')
  t.equal((await app.inject({ method: 'POST', url: `/conversations/${conversationId}/messages`, headers: acme.agent.headers, payload: { body: 'Public reply' } })).statusCode, 201)
  await barrier
  t.same(ginaMessages.map((m) => m.message.body), ['Public reply'], 'the visitor received only the public message')
  t.notOk(JSON.stringify(ginaMessages).includes('SECRET'))
  t.same(ginaAll.filter((e) => e !== 'message:new'), [], 'and no other event (no mention, no conversation update)')
  t.same(mentionsToOwner, [], 'a member who was not mentioned gets no mention:new')
  t.same(mentionsToAgent, [], 'nor does the author')
})
