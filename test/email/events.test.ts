// message:updated over a real socket: the real gateway process (src/gateway/server.ts) on the
// test's Redis; a member sees an e-mail reply move from queued to sent, a visitor socket of the
// same guest never sees it.
import t from 'tap'
import { build } from '../helper.js'
import { connect, next, record, startGateway, testDatabaseAndPrefix } from '../gateway/fixtures.js'
import { fast, startSmtp, waitFor } from '../transcripts/smtp.js'
import { mailThread, SMTP_AUTH } from './fixtures.js'

t.test('message:updated reaches the members over the gateway', async (t) => {
  const smtp = await startSmtp(0, { auth: SMTP_AUTH })
  t.teardown(smtp.close)
  const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
  const [{ app }, gateway] = await Promise.all([
    build(t, { databaseUrl, env: { ...fast, REDIS_PREFIX: redisPrefix } }),
    startGateway(t, { databaseUrl, redisPrefix }),
  ])
  const th = await mailThread(app, smtp.port)
  const other = await mailThread(app, smtp.port)
  const member = await connect(t, gateway.url, { token: th.ws.agent.token, workspaceId: th.ws.workspaceId })
  const stranger = await connect(t, gateway.url, { token: other.ws.agent.token, workspaceId: other.ws.workspaceId })
  const strangerGot = record(stranger, 'message:updated')
  const visitorSession = app.deps.visitorTokens.sign({ guestId: th.guestId, channelId: th.channelId, workspaceId: th.ws.workspaceId }).token
  const visitor = await connect(t, gateway.url, { visitorSession })
  const visitorGot = record(visitor, 'message:updated')
  const visitorNew = record<{ message: { id: string } }>(visitor, 'message:new')

  const sent = next<{ conversationId: string; message: { id: string; delivery: { status: string } } }>(
    member,
    'message:updated',
    (p) => p.message.delivery?.status === 'sent',
    20000,
  )
  const res = await app.inject({ method: 'POST', url: `/conversations/${th.conversationId}/messages`, headers: th.ws.agent.headers, payload: { body: 'Hi by mail' } })
  t.equal(res.statusCode, 201)
  const payload = await sent
  t.equal(payload.conversationId, th.conversationId)
  t.equal(payload.message.id, res.json().id)
  t.match(payload.message, { body: 'Hi by mail', senderType: 'AGENT', delivery: { status: 'sent', error: null } })
  await waitFor(() => smtp.mails.length === 1)
  await new Promise((r) => setTimeout(r, 300))
  t.same(strangerGot, [], 'another workspace hears nothing')
  t.same(visitorNew.map((p) => p.message.id), [res.json().id], 'the guest’s socket is live: it got message:new')
  t.same(visitorGot, [], 'but no message:updated: members only')
})
