import t from 'tap'
import { build, seedGuest, seedWorkspace } from '../helper.js'
import { eventA, eventB, headersB, providerAEnv, providerBEnv, signA, startFakeProviderB, uniq } from '../billing/fixtures.js'

/**
 * The abuse-limit table (API.md section 2), each row reproduced through HTTP as an attacker would
 * use it. The limits are set small here; test/helper.ts sets them high for the feature tests.
 */

const create = (app: Awaited<ReturnType<typeof build>>['app'], guest: { headers: Record<string, string>; channelId: string; guestId: string }, ip = '203.0.113.10') =>
  app.inject({ method: 'POST', url: '/conversations', headers: guest.headers, payload: { channelId: guest.channelId, guestId: guest.guestId }, remoteAddress: ip })

t.test('visitor messages: VISITOR_MESSAGES_PER_MIN per guest; members are not limited', async (t) => {
  const { app } = await build(t, { env: { VISITOR_MESSAGES_PER_MIN: '3' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const other = await seedGuest(app, ws, 'Other')
  const conv = (await create(app, guest)).json()
  const otherConv = (await create(app, other)).json()
  const post = (headers: Record<string, string>, id: string, body: string) =>
    app.inject({ method: 'POST', url: `/conversations/${id}/messages`, headers, payload: { body: body.padEnd(10_000, 'x') } })

  const statuses = []
  for (let i = 0; i < 3; i++) statuses.push((await post(guest.headers, conv.id, `m${i}`)).statusCode)
  t.same(statuses, [201, 201, 201])
  const over = await post(guest.headers, conv.id, 'flood')
  t.equal(over.statusCode, 429)
  t.match(over.json(), { statusCode: 429, error: 'Too Many Requests', code: 'RATE_LIMITED' })
  const retryAfter = Number(over.headers['retry-after'])
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${over.headers['retry-after']}`)
  t.equal((await post(other.headers, otherConv.id, 'hello')).statusCode, 201, 'another guest has its own budget')
  for (let i = 0; i < 5; i++) {
    const r = await post(ws.agent.headers, conv.id, `agent ${i}`)
    if (r.statusCode !== 201) t.fail(`member message ${i}: ${r.statusCode}`)
  }
  const invalid = await app.inject({ method: 'POST', url: `/conversations/${otherConv.id}/messages`, headers: other.headers, payload: { body: 12 } })
  t.equal(invalid.statusCode, 400, 'an invalid body is refused before the limit and uses up nothing')
  t.equal((await post(other.headers, otherConv.id, 'two')).statusCode, 201)
  t.equal((await post(other.headers, otherConv.id, 'three')).statusCode, 201)
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM messages WHERE conversation_id = ${conv.id} AND sender_type = 'GUEST'`
  t.equal(n, 3, 'the refused message was not stored')
})

t.test('visitor conversations: per guest and per client address an hour', async (t) => {
  const { app } = await build(t, { env: { VISITOR_CONVERSATIONS_PER_HOUR: '2', VISITOR_CONVERSATIONS_PER_ADDRESS_PER_HOUR: '3' } })
  const ws = await seedWorkspace(app)
  const a = await seedGuest(app, ws, 'A')
  const b = await seedGuest(app, ws, 'B')
  const c = await seedGuest(app, ws, 'C')
  t.same([(await create(app, a)).statusCode, (await create(app, a)).statusCode], [201, 201])
  const perGuest = await create(app, a)
  t.equal(perGuest.statusCode, 429, 'the third of one guest in the hour')
  t.equal(perGuest.json().code, 'RATE_LIMITED')
  t.ok(Number(perGuest.headers['retry-after']) > 60, 'Retry-After counts in the hour window')
  t.equal((await create(app, b)).statusCode, 201, 'another guest, same address: the third of the address')
  const perAddress = await create(app, b)
  t.equal(perAddress.statusCode, 429, 'the fourth of the address, though this guest made only one')
  t.equal((await create(app, c, '198.51.100.20')).statusCode, 201, 'another address has its own budget')
  const mismatch = await app.inject({ method: 'POST', url: '/conversations', headers: c.headers, payload: { channelId: c.channelId, guestId: a.guestId }, remoteAddress: '198.51.100.21' })
  t.equal(mismatch.statusCode, 403)
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM conversations WHERE workspace_id = ${ws.workspaceId}`
  t.equal(n, 4, 'refused creates stored nothing')
})

t.test('open conversations of one guest: the cap holds under concurrency (409 TOO_MANY_OPEN_CONVERSATIONS)', async (t) => {
  const { app } = await build(t, { env: { VISITOR_OPEN_CONVERSATIONS_MAX: '2' } })
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const results = await Promise.all(Array.from({ length: 6 }, () => create(app, guest)))
  const statuses = results.map((r) => r.statusCode).sort()
  t.same(statuses, [201, 201, 409, 409, 409, 409], 'six at once: two created')
  const refused = results.find((r) => r.statusCode === 409)!
  t.match(refused.json(), { statusCode: 409, error: 'Conflict', code: 'TOO_MANY_OPEN_CONVERSATIONS' })
  const open = await app.deps.sql<{ id: string }[]>`SELECT id FROM conversations WHERE guest_id = ${guest.guestId} AND status = 'OPEN'`
  t.equal(open.length, 2)

  const close = await app.inject({ method: 'PATCH', url: `/conversations/${open[0].id}/close`, headers: ws.agent.headers })
  t.equal(close.statusCode, 200)
  t.equal((await create(app, guest)).statusCode, 201, 'a resolved one leaves room for a new one')
  t.equal((await create(app, guest)).statusCode, 409, 'at the cap again')
  const reopen = await app.inject({ method: 'POST', url: `/conversations/${open[0].id}/messages`, headers: guest.headers, payload: { body: 'one more thing' } })
  t.equal(reopen.statusCode, 201, 'a guest message that reopens a conversation is never refused for the cap')
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM conversations WHERE guest_id = ${guest.guestId} AND status = 'OPEN'`
  t.equal(n, 3)
})

t.test('transcript e-mail is not a relay: an unverified address 3 a day, whatever the workspace, retargeting included', async (t) => {
  const { app } = await build(t, { env: { JOBS_WORKER: 'false', TRANSCRIPT_UNVERIFIED_PER_DAY: '2' } })
  const ws = await seedWorkspace(app)
  const ws2 = await seedWorkspace(app, 'Other')
  const victim = 'Victim@Example.test'
  const guest = await seedGuest(app, ws, 'Phisher', victim)
  const mail = async (g: { headers: Record<string, string> }, id: string) =>
    app.inject({ method: 'POST', url: `/conversations/${id}/transcript`, headers: g.headers, payload: {} })

  const c1 = (await create(app, guest)).json()
  const c2 = (await create(app, guest)).json()
  const c3 = (await create(app, guest)).json()
  t.equal((await mail(guest, c1.id)).statusCode, 200)
  t.equal((await mail(guest, c2.id)).statusCode, 200)
  const third = await mail(guest, c3.id)
  t.equal(third.statusCode, 429, 'the third mail to the address in the day, from another conversation')
  t.equal(third.json().code, 'RATE_LIMITED')
  t.ok(Number(third.headers['retry-after']) > 3600, `Retry-After ${third.headers['retry-after']} (the day's window)`)

  const elsewhere = await seedGuest(app, ws2, 'Phisher 2', ' victim@example.TEST')
  const c4 = (await create(app, elsewhere)).json()
  t.equal((await mail(elsewhere, c4.id)).statusCode, 429, 'another workspace, the same address (trimmed, any case): still refused')

  // The relay of the issue: re-run POST /auth with the session to point it at a new address.
  const resumed = await app.inject({
    method: 'POST',
    url: '/auth',
    headers: guest.headers,
    payload: { channelId: ws.channelId, name: 'Phisher', email: 'second-victim@example.test' },
  })
  t.equal(resumed.statusCode, 200, 'the contract lets a session change its e-mail')
  t.equal((await mail(guest, c3.id)).statusCode, 200, 'a new address has its own allowance')
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM transcript_requests WHERE lower(email) = 'victim@example.test'`
  t.equal(n, 2, 'two mails to the victim, no more')

  const member = await app.inject({ method: 'POST', url: `/conversations/${c1.id}/transcript`, headers: ws.agent.headers, payload: { email: victim } })
  t.equal(member.statusCode, 200, 'members are not limited per recipient (only per conversation)')

  // A verified guest proved its address (identityHash): the per-recipient row does not apply.
  const { identityHash } = await import('../../src/auth/bootstrap.js')
  const verified = await app.inject({
    method: 'POST',
    url: '/auth',
    payload: { channelId: ws.channelId, name: 'Vic', email: victim, identityHash: identityHash(ws.identitySecret, victim) },
  })
  t.equal(verified.statusCode, 201)
  const vGuest = { headers: { 'x-visitor-session': verified.json().visitorSession }, channelId: ws.channelId, guestId: verified.json().guestId }
  const vc = (await create(app, vGuest)).json()
  t.equal((await mail(vGuest, vc.id)).statusCode, 200, 'a verified guest mails its own address')
})

t.test('failed webhook verifications: WEBHOOK_FAILURES_PER_MIN per address, both providers, before provider B is called', async (t) => {
  const fake = await startFakeProviderB(t)
  const { app } = await build(t, { env: { ...providerBEnv(fake.url), ...providerAEnv, WEBHOOK_FAILURES_PER_MIN: '3' } })
  const ws = await seedWorkspace(app)
  const attacker = '203.0.113.66'
  const provider = '198.51.100.77'
  const postB = (ip: string, payload: string) =>
    app.inject({ method: 'POST', url: '/billing/webhooks/provider-b', headers: headersB(), payload, remoteAddress: ip })
  const postA = (ip: string, payload: string, signature: string) =>
    app.inject({ method: 'POST', url: '/billing/webhooks/provider-a', headers: { 'content-type': 'application/json', 'provider-a-signature': signature }, payload, remoteAddress: ip })

  // Genuine deliveries are never counted: more than the limit, all accepted.
  for (let i = 0; i < 5; i++) {
    const body = eventB('PAYMENT.CAPTURE.COMPLETED', { id: uniq('CAP'), amount: { value: '1.00', currency_code: 'USD' }, custom_id: ws.workspaceId })
    const r = await postB(provider, body)
    if (r.statusCode !== 200) t.fail(`genuine delivery ${i}: ${r.statusCode} ${r.body}`)
  }
  const verifiedCalls = fake.verifyCalls().length
  t.equal(verifiedCalls, 5)

  fake.mode.verify = 'FAILURE'
  const junk = '{"id":"x"}'.padEnd(1024 * 1024 - 10, ' ')
  const failures = []
  failures.push((await postB(attacker, junk)).statusCode)
  failures.push((await postA(attacker, '{"id":"evt"}', 't=1,v1=00')).statusCode)
  failures.push((await postB(attacker, junk)).statusCode)
  t.same(failures, [400, 400, 400], 'three failed verifications, both providers')
  t.equal(fake.verifyCalls().length, verifiedCalls + 2, 'provider B was asked twice')
  const over = await postB(attacker, junk)
  t.equal(over.statusCode, 429, 'the address is over the limit')
  t.equal(over.json().code, 'RATE_LIMITED')
  t.ok(Number(over.headers['retry-after']) >= 1)
  t.equal(fake.verifyCalls().length, verifiedCalls + 2, "provider B's verification API was not called again")
  const payloadA = eventA('payment_intent.succeeded', { id: uniq('pi'), amount: 100, currency: 'usd', metadata: { workspaceId: ws.workspaceId } })
  t.equal((await postA(attacker, payloadA, signA(payloadA))).statusCode, 429, 'until its window ends, whatever it sends')

  fake.mode.verify = 'SUCCESS'
  const body = eventB('PAYMENT.CAPTURE.COMPLETED', { id: uniq('CAP'), amount: { value: '2.00', currency_code: 'USD' }, custom_id: ws.workspaceId })
  t.equal((await postB(provider, body)).statusCode, 200, "another address's deliveries go through")
})

t.test('POST /support/csat: CSAT_RATE_LIMIT_PER_MIN per guest (10 a minute), replacements included', async (t) => {
  const { app } = await build(t, { env: { CSAT_RATE_LIMIT_PER_MIN: undefined } }) // the contract's default
  const ws = await seedWorkspace(app)
  await app.inject({ method: 'PATCH', url: `/channels/${ws.channelId}`, headers: ws.owner.headers, payload: { widget: { csatEnabled: true } } })
  const resolved = async (guest: Awaited<ReturnType<typeof seedGuest>>) => {
    const conv = (await create(app, guest)).json()
    await app.inject({ method: 'PATCH', url: `/conversations/${conv.id}/close`, headers: ws.agent.headers })
    return conv.id as string
  }
  const guest = await seedGuest(app, ws)
  const other = await seedGuest(app, ws, 'Other')
  const [convId, otherConvId] = [await resolved(guest), await resolved(other)]
  const rate = (headers: Record<string, string>, conversationId: string, rating: number) =>
    app.inject({ method: 'POST', url: '/support/csat', headers, payload: { conversationId, rating } })

  t.equal((await app.inject({ method: 'POST', url: '/support/csat', headers: guest.headers, payload: { conversationId: convId, rating: 9 } })).statusCode, 400, 'an invalid rating uses up nothing')
  const statuses = []
  for (let i = 0; i < 10; i++) statuses.push((await rate(guest.headers, convId, (i % 5) + 1)).statusCode)
  t.same(statuses, [201, 200, 200, 200, 200, 200, 200, 200, 200, 200], 'ten ratings, nine of them replacements')
  const over = await rate(guest.headers, convId, 3)
  t.equal(over.statusCode, 429, 'the 11th in the minute')
  t.match(over.json(), { statusCode: 429, error: 'Too Many Requests', code: 'RATE_LIMITED' })
  const retryAfter = Number(over.headers['retry-after'])
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${over.headers['retry-after']}`)
  const [{ rating }] = await app.deps.sql<{ rating: number }[]>`SELECT rating FROM csat_ratings WHERE conversation_id = ${convId}`
  t.equal(rating, 5, 'the refused replacement changed nothing')
  t.equal((await rate(other.headers, otherConvId, 4)).statusCode, 201, 'another guest has its own budget')
})
