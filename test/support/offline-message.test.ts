import t from 'tap'
import { PresenceStore } from '../../src/gateway/presence.js'
import { build, redisOf, seedGuest, seedWorkspace } from '../helper.js'
import { listenEvents } from '../conversations/fixtures.js'
import { fast, startSmtp, waitFor } from '../transcripts/smtp.js'

t.test('offline message: a conversation with the message, one e-mail per active owner and admin', async (t) => {
  const smtp = await startSmtp()
  t.teardown(() => smtp.close())
  const { app, redisPrefix } = await build(t, { env: { ...fast, SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, APP_URL: 'https://app.parley.test' } })
  const ws = await seedWorkspace(app)
  const secondAdmin = await ws.addMember('admin', 'Second Admin')
  const disabled = await ws.addMember('owner', 'Gone Owner')
  await app.deps.sql`UPDATE members SET status = 'disabled' WHERE user_id = ${disabled.userId}`
  const guest = await seedGuest(app, ws, 'Nora Nomail')
  await app.deps.sql`UPDATE guests SET email = NULL WHERE id = ${guest.guestId}`
  const events = await listenEvents(t, redisPrefix)

  const res = await app.inject({
    method: 'POST',
    url: '/support/offline-message',
    headers: guest.headers,
    payload: { body: 'Are you open on Sunday?\nThanks', email: 'Nora@Example.test' },
  })
  t.equal(res.statusCode, 201)
  const conv = res.json()
  t.match(conv, { guestId: guest.guestId, status: 'OPEN', unreadCount: 1, seen: false, lastMessagePreview: 'Are you open on Sunday?\nThanks', guest: { email: 'Nora@Example.test' } })
  const messages = (await app.inject({ method: 'GET', url: `/conversations/${conv.id}/messages`, headers: ws.agent.headers })).json().data
  t.match(messages, [{ senderType: 'GUEST', senderId: guest.guestId, senderName: 'Nora Nomail', body: 'Are you open on Sunday?\nThanks' }])
  const unread = (await app.inject({ method: 'GET', url: '/conversations/unread-count', headers: ws.agent.headers })).json()
  t.match(unread, { total: 1, messages: 1, unassigned: 1 }, 'counted unread like any guest message')
  const reconcile = (await app.inject({ method: 'GET', url: '/conversations/counts/reconcile', headers: ws.owner.headers })).json()
  t.equal(reconcile.corrected, false, 'counters agree with the rows')
  await events.waitFor((e) => e.event === 'message:new' && e.payload.conversationId === conv.id)
  await events.waitFor((e) => e.event === 'conversation:updated' && e.payload.conversation.id === conv.id)

  await waitFor(() => smtp.mails.length === 3)
  const to = smtp.mails.map((m) => m.envelopeTo[0]).sort()
  t.same(to, [ws.owner.email, ws.admin.email, secondAdmin.email].sort(), 'active owners and admins; not agents, not disabled members')
  const mail = smtp.mails[0]
  t.match(mail.subject, /Offline message from Nora Nomail/)
  t.match(mail.text, /Are you open on Sunday\?/)
  t.match(mail.text, /Nora@Example\.test/)
  t.match(mail.text, new RegExp(`https://app\\.parley\\.test/conversations/${conv.id}`))
  t.equal(mail.replyTo?.value[0]?.address?.toLowerCase(), 'nora@example.test', 'Reply-To: the guest (mailparser lower-cases the domain)')
  await new Promise((r) => setTimeout(r, 1500))
  t.equal(smtp.mails.length, 3, 'exactly one each')
})

t.test('offline message while a member is online: no e-mail; validation and access', async (t) => {
  const { app, redisPrefix } = await build(t, { env: { JOBS_WORKER: 'false' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const presence = new PresenceStore({ redis: redisOf(app), prefix: redisPrefix, gatewayId: 'test-gw', entryTtlMs: 30_000 })
  await presence.add(ws.workspaceId, ws.agent.userId, 'sock-1')
  const send = (payload: unknown, headers: Record<string, string> = guest.headers) =>
    app.inject({ method: 'POST', url: '/support/offline-message', headers, payload: payload as object })
  t.equal((await send({ body: 'Hello' })).statusCode, 201)
  const jobs = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'offline-message-mail'`
  t.equal(jobs[0].n, 0, 'someone is online: they see it in the inbox')
  const [{ email }] = await app.deps.sql<{ email: string }[]>`SELECT email FROM guests WHERE id = ${guest.guestId}`
  t.equal(email, guest.email, 'no email given: the address is kept')

  for (const [payload, message] of [
    [{}, /missing field 'body'/],
    [{ body: '' }, /body/],
    [{ body: 'x'.repeat(10_001) }, /body/],
    [{ body: 'hi', email: 'nope' }, /email/],
    [{ body: 'hi', guestId: guest.guestId }, /unknown field 'guestId'/],
  ] as const) {
    const r = await send(payload)
    t.equal(r.statusCode, 400, JSON.stringify(payload).slice(0, 60))
    t.match(r.json(), { code: 'VALIDATION_ERROR', message })
  }
  t.equal((await send({ body: 'hi' }, ws.owner.headers)).statusCode, 401, 'members do not send offline messages')
  t.equal((await send({ body: 'hi' }, {})).statusCode, 401)
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { active: false } })
  const gone = await send({ body: 'hi' })
  t.same([gone.statusCode, gone.json().code], [401, 'SESSION_REVOKED'], 'inactive channel: its sessions are revoked, nothing created')
  const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations`
  t.equal(n, 1)
})

t.test('offline messages share the visitor conversation budgets and the open-conversation cap', async (t) => {
  const { app } = await build(t, { env: { JOBS_WORKER: 'false', VISITOR_CONVERSATIONS_PER_HOUR: '3', VISITOR_OPEN_CONVERSATIONS_MAX: '2' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const send = () => app.inject({ method: 'POST', url: '/support/offline-message', headers: guest.headers, payload: { body: 'Hello?' } })
  t.equal((await send()).statusCode, 201)
  const start = await app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: ws.channelId, guestId: guest.guestId } })
  t.equal(start.statusCode, 201, 'POST /conversations counts in the same budget...')
  const capped = await send()
  t.same([capped.statusCode, capped.json().code], [409, 'TOO_MANY_OPEN_CONVERSATIONS'], 'two open: the third is refused')
  // A 409 at the cap used its slot (docs/security.md): the budget of 3 is spent.
  await app.deps.sql`UPDATE conversations SET status = 'RESOLVED', closed_at = now() WHERE guest_id = ${guest.guestId}`
  const limited = await send()
  t.same([limited.statusCode, limited.json().code], [429, 'RATE_LIMITED'], 'the fourth in the hour')
  t.ok(Number(limited.headers['retry-after']) > 0)
  const [{ n }] = await app.deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM conversations WHERE guest_id = ${guest.guestId}`
  t.equal(n, 2)
})
