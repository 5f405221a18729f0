import { randomBytes, randomUUID } from 'node:crypto'
import t from 'tap'
import { SignJWT } from 'jose'
import { build, memberToken, seedWorkspace, TEST_VISITOR_SECRET } from '../helper.js'
import { identityHash } from '../../src/auth/bootstrap.js'
import type { App } from '../../src/app.js'

type Payload = Record<string, unknown>
const boot = (app: App, payload: Payload, headers: Record<string, string> = {}, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url: '/auth', headers, payload, remoteAddress })

const guestRow = async (app: App, id: string) =>
  (
    await app.deps.sql<{ name: string; email: string; verified: boolean; workspaceId: string; channelId: string }[]>`
      SELECT name, email, verified, workspace_id AS "workspaceId", channel_id AS "channelId" FROM guests WHERE id = ${id}`
  )[0]

async function addChannel(
  app: App,
  workspaceId: string,
  values: { active?: boolean; requireChannelToken?: boolean; allowedOrigins?: string[] } = {},
) {
  const row = {
    id: randomUUID(),
    channelToken: `ct_${randomBytes(12).toString('hex')}`,
    identitySecret: `is_${randomBytes(24).toString('hex')}`,
    active: true,
    requireChannelToken: false,
    allowedOrigins: [] as string[],
    ...values,
  }
  await app.deps.sql`
    INSERT INTO channels (id, workspace_id, name, channel_token, identity_secret, active, require_channel_token, allowed_origins)
    VALUES (${row.id}, ${workspaceId}, 'Second', ${row.channelToken}, ${row.identitySecret}, ${row.active},
            ${row.requireChannelToken}, ${row.allowedOrigins}::text[])`
  return row
}

t.test('each call creates a new guest; a session of the same channel resumes it', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const body = { channelId: ws.channelId, name: 'Vera Visitor', email: 'vera@example.test' }
  const first = await boot(app, body)
  t.equal(first.statusCode, 201)
  const a = first.json()
  t.same(Object.keys(a).sort(), ['channelId', 'expiresAt', 'guestId', 'visitorSession', 'workspaceId'])
  t.match(a, { channelId: ws.channelId, workspaceId: ws.workspaceId })
  const ttl = Date.parse(a.expiresAt) - Date.now()
  t.ok(ttl > 2592000_000 - 60_000 && ttl <= 2592000_000, 'expires in VISITOR_SESSION_TTL_S (30 days)')
  t.same(app.deps.visitorTokens.verify(a.visitorSession), { guestId: a.guestId, channelId: ws.channelId, workspaceId: ws.workspaceId, epoch: 0, exp: Date.parse(a.expiresAt) / 1000 })
  t.match(await guestRow(app, a.guestId), { name: 'Vera Visitor', email: 'vera@example.test', verified: false, workspaceId: ws.workspaceId })

  const second = await boot(app, body)
  t.equal(second.statusCode, 201, 'same name and e-mail, no session: another new guest')
  t.not(second.json().guestId, a.guestId)

  const resumed = await boot(app, { ...body, name: 'Vera V.', email: 'vera.v@example.test' }, { 'x-visitor-session': a.visitorSession })
  t.equal(resumed.statusCode, 200)
  t.equal(resumed.json().guestId, a.guestId, 'same guest')
  t.match(await guestRow(app, a.guestId), { name: 'Vera V.', email: 'vera.v@example.test' }, 'name and e-mail updated')
  t.same(app.deps.visitorTokens.verify(resumed.json().visitorSession).guestId, a.guestId, 'a fresh session for it')

  // A valid session of another channel does not carry over: a new guest on this channel.
  const other = await addChannel(app, ws.workspaceId)
  const elsewhere = await boot(app, { ...body, channelId: other.id }, { 'x-visitor-session': a.visitorSession })
  t.equal(elsewhere.statusCode, 201)
  t.not(elsewhere.json().guestId, a.guestId)
  t.equal((await guestRow(app, elsewhere.json().guestId)).channelId, other.id)
  t.equal((await guestRow(app, a.guestId)).name, 'Vera V.', 'the first guest is untouched')

  // An authentic but expired session is the widget's normal state after 30 days: start afresh.
  const expired = await new SignJWT({ guestId: a.guestId, channelId: ws.channelId, workspaceId: ws.workspaceId })
    .setProtectedHeader({ alg: 'HS256' })
    .setAudience('parley:visitor')
    .setIssuer('parley')
    .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
    .sign(new TextEncoder().encode(TEST_VISITOR_SECRET))
  const afresh = await boot(app, body, { 'x-visitor-session': expired })
  t.equal(afresh.statusCode, 201)
  t.not(afresh.json().guestId, a.guestId)

  // Sessions that do not verify at all are refused, and nothing is written.
  const [{ n: before }] = await app.deps.sql`SELECT count(*)::int AS n FROM guests`
  const forged = await new SignJWT({ guestId: a.guestId, channelId: ws.channelId, workspaceId: ws.workspaceId })
    .setProtectedHeader({ alg: 'HS256' })
    .setAudience('parley:visitor')
    .setIssuer('parley')
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode('someone-elses-secret-0123456789'))
  for (const [name, session] of [
    ['forged', forged],
    ['member token', await memberToken(ws.agent.userId)],
    ['garbage', 'abc.def.ghi'],
  ]) {
    const res = await boot(app, body, { 'x-visitor-session': session })
    t.same([res.statusCode, res.json().code], [401, 'INVALID_VISITOR_SESSION'], `${name} as x-visitor-session`)
  }
  const [{ n: after }] = await app.deps.sql`SELECT count(*)::int AS n FROM guests`
  t.equal(after, before)
})

t.test('identityHash: verified guests, and a bare e-mail never links', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const email = 'vip@example.test'
  const hash = identityHash(ws.identitySecret, email)
  const created = await boot(app, { channelId: ws.channelId, name: 'V.I.P.', email, identityHash: hash })
  const vip = created.json().guestId
  let again: Awaited<ReturnType<typeof boot>>

  await t.test('the first verified login creates a verified guest (the contract formula)', async (t) => {
    t.equal(hash, (await import('node:crypto')).createHmac('sha256', ws.identitySecret).update(email).digest('hex'), 'the contract formula')
    t.equal(created.statusCode, 201, 'first verified login creates the guest')
    t.match(await guestRow(app, vip), { verified: true, email })
  })

  await t.test('a bare e-mail makes a new, unrelated guest; the right hash (any case) resumes the verified one', async (t) => {
    // The history the VIP builds lives on this guest; nobody may reach it with the address alone.
    const bare = await boot(app, { channelId: ws.channelId, name: 'Impostor', email })
    t.equal(bare.statusCode, 201, 'bare e-mail: a new, unrelated guest')
    t.not(bare.json().guestId, vip)
    t.match(await guestRow(app, bare.json().guestId), { verified: false })
    t.equal((await guestRow(app, vip)).name, 'V.I.P.', 'the verified guest is untouched')

    again = await boot(app, { channelId: ws.channelId, name: 'VIP again', email: 'VIP@Example.TEST', identityHash: hash.toUpperCase() })
    t.equal(again.statusCode, 200, 'correct hash (e-mail in another case) resumes the verified guest')
    t.equal(again.json().guestId, vip)
    t.equal((await guestRow(app, vip)).name, 'VIP again')
  })

  await t.test('a wrong hash is 401 INVALID_IDENTITY_HASH (never echoing the secret), a malformed one 400', async (t) => {
    for (const [name, wrong] of [
      ['hash of another e-mail', identityHash(ws.identitySecret, 'other@example.test')],
      ['hash with another secret', identityHash('is_not_the_secret', email)],
      ['hash of the bare e-mail without secret', (await import('node:crypto')).createHash('sha256').update(email).digest('hex')],
    ]) {
      const res = await boot(app, { channelId: ws.channelId, name: 'X', email, identityHash: wrong })
      t.same([res.statusCode, res.json().code], [401, 'INVALID_IDENTITY_HASH'], name)
      t.notMatch(res.body, ws.identitySecret)
    }
    const malformed = await boot(app, { channelId: ws.channelId, name: 'X', email, identityHash: 'zz' })
    t.same([malformed.statusCode, malformed.json().code], [400, 'VALIDATION_ERROR'])
    t.match(malformed.json().message, /identityHash/)
  })

  await t.test("on another channel the same address is another guest, and channel A's hash does not work", async (t) => {
    // The same address on another channel is another guest (the secret is per channel too).
    const other = await addChannel(app, ws.workspaceId)
    const elsewhere = await boot(app, { channelId: other.id, name: 'VIP', email, identityHash: identityHash(other.identitySecret, email) })
    t.equal(elsewhere.statusCode, 201)
    t.not(elsewhere.json().guestId, vip)
    const crossSecret = await boot(app, { channelId: other.id, name: 'VIP', email, identityHash: hash })
    t.equal(crossSecret.statusCode, 401, "channel A's hash does not work on channel B")
  })

  await t.test('an anonymous visitor who logs in keeps its guest, now verified', async (t) => {
    // An anonymous visitor who then logs in keeps their guest, now verified.
    const anon = (await boot(app, { channelId: ws.channelId, name: 'Anon', email: 'anon@example.test' })).json()
    const login = await boot(
      app,
      { channelId: ws.channelId, name: 'Known', email: 'known@example.test', identityHash: identityHash(ws.identitySecret, 'known@example.test') },
      { 'x-visitor-session': anon.visitorSession },
    )
    t.same([login.statusCode, login.json().guestId], [200, anon.guestId])
    t.match(await guestRow(app, anon.guestId), { verified: true, email: 'known@example.test' })
  })

  await t.test('a verified guest that changes its e-mail without a hash loses verification, and the address is never linked', async (t) => {
    // A verified guest that changes its e-mail without a hash is no longer matched by e-mail.
    const vipSession = again.json().visitorSession
    const sameAddress = await boot(app, { channelId: ws.channelId, name: 'VIP by session', email: 'Vip@example.test' }, { 'x-visitor-session': vipSession })
    t.same([sameAddress.statusCode, sameAddress.json().guestId], [200, vip])
    t.match(await guestRow(app, vip), { verified: true, name: 'VIP by session' }, 'resuming with the same address keeps it verified')
    const changed = await boot(app, { channelId: ws.channelId, name: 'VIP', email: 'new-vip@example.test' }, { 'x-visitor-session': vipSession })
    t.same([changed.statusCode, changed.json().guestId], [200, vip])
    t.match(await guestRow(app, vip), { verified: false, email: 'new-vip@example.test' })
    const unproved = await boot(app, {
      channelId: ws.channelId,
      name: 'X',
      email: 'new-vip@example.test',
      identityHash: identityHash(ws.identitySecret, 'new-vip@example.test'),
    })
    t.equal(unproved.statusCode, 201, 'the unproved address was never linked')
    t.not(unproved.json().guestId, vip)
  })
})

t.test('concurrent first logins of one verified e-mail make one guest', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const email = 'race@example.test'
  const payload = { channelId: ws.channelId, name: 'Racer', email, identityHash: identityHash(ws.identitySecret, email) }
  const results = await Promise.all(Array.from({ length: 6 }, () => boot(app, payload)))
  const statuses = results.map((r) => r.statusCode).sort()
  t.same(statuses, [200, 200, 200, 200, 200, 201], 'one 201, the rest resume')
  t.equal(new Set(results.map((r) => r.json().guestId)).size, 1)
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM guests WHERE lower(email) = ${email}`
  t.equal(n, 1)
})

t.test('channel checks: unknown, inactive, channel token, allowed origins', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const body = (channelId: string) => ({ channelId, name: 'G', email: 'g@example.test' })

  for (const id of [randomUUID(), (await addChannel(app, ws.workspaceId, { active: false })).id]) {
    const res = await boot(app, body(id))
    t.same([res.statusCode, res.json().code], [404, 'CHANNEL_NOT_FOUND'])
  }
  const malformed = await boot(app, body('nope'))
  t.same([malformed.statusCode, malformed.json().code], [400, 'VALIDATION_ERROR'])
  t.match(malformed.json().message, /channelId/)

  const locked = await addChannel(app, ws.workspaceId, { requireChannelToken: true })
  for (const [name, headers] of [
    ['missing', {}],
    ['wrong', { 'x-channel-token': 'ct_wrong' }],
    ['another channel token', { 'x-channel-token': ws.channelToken }],
  ] as [string, Record<string, string>][]) {
    const res = await boot(app, body(locked.id), headers)
    t.same([res.statusCode, res.json().code], [401, 'INVALID_CHANNEL_TOKEN'], `${name} x-channel-token`)
  }
  t.equal((await boot(app, body(locked.id), { 'x-channel-token': locked.channelToken })).statusCode, 201)
  t.equal((await boot(app, body(ws.channelId), { 'x-channel-token': 'anything' })).statusCode, 201, 'not required: not checked')

  const fenced = await addChannel(app, ws.workspaceId, { allowedOrigins: ['https://shop.example.com', 'http://localhost:3000'] })
  for (const origin of ['https://evil.example.com', 'http://shop.example.com', 'https://shop.example.com.evil.test', 'null']) {
    const res = await boot(app, body(fenced.id), { origin })
    t.same([res.statusCode, res.json().code], [403, 'ORIGIN_NOT_ALLOWED'], `Origin ${origin}`)
  }
  for (const origin of ['https://shop.example.com', 'https://SHOP.example.com', 'http://localhost:3000']) {
    t.equal((await boot(app, body(fenced.id), { origin })).statusCode, 201, `Origin ${origin}`)
  }
  t.equal((await boot(app, body(fenced.id))).statusCode, 201, 'no Origin: not a browser, not checked')
  t.equal((await boot(app, body(ws.channelId), { origin: 'https://anywhere.example' })).statusCode, 201, 'empty list: any origin')

  // CORS: the widget's preflight from any site is answered.
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/auth',
    headers: { origin: 'https://shop.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-channel-token' },
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'https://shop.example.com')
})

t.test('POST /auth validation', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  for (const [payload, message] of [
    [{ name: 'G', email: 'g@example.test' }, /missing field 'channelId'/],
    [{ channelId: ws.channelId, email: 'g@example.test' }, /missing field 'name'/],
    // email is optional (a visitor may chat before giving one), but an identityHash is a hash of it.
    [{ channelId: ws.channelId, name: 'G', identityHash: 'a'.repeat(64) }, /field 'email' is required with identityHash/],
    [{ channelId: ws.channelId, name: 'G', email: 'nope' }, /email/],
    [{ channelId: ws.channelId, name: 'G', email: `${'a'.repeat(250)}@x.io` }, /email/],
    [{ channelId: ws.channelId, name: '', email: 'g@example.test' }, /name/],
    [{ channelId: ws.channelId, name: 'G', email: 'g@example.test', verified: true }, /unknown field 'verified'/],
    [{ channelId: ws.channelId, name: 'G', email: 'g@example.test', guestId: randomUUID() }, /unknown field 'guestId'/],
  ] as const) {
    const res = await boot(app, payload as Payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 80))
    t.match(res.json(), { statusCode: 400, code: 'VALIDATION_ERROR', message })
  }
  const text = await app.inject({ method: 'POST', url: '/auth', headers: { 'content-type': 'text/plain' }, payload: 'hello' })
  t.equal(text.statusCode, 415)
  const [{ n }] = await app.deps.sql`SELECT count(*)::int AS n FROM guests`
  t.equal(n, 0)
})

t.test('rate limit per client address and channel, shared across replicas', async (t) => {
  const env = { AUTH_RATE_LIMIT_PER_MIN: '3', REDIS_PREFIX: `t:${randomBytes(6).toString('hex')}:` }
  const one = await build(t, { env })
  const two = await build(t, { env, databaseUrl: one.databaseUrl })
  const ws = await seedWorkspace(one.app)
  const other = await addChannel(one.app, ws.workspaceId)
  const body = (channelId: string) => ({ channelId, name: 'G', email: 'g@example.test' })
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) statuses.push((await boot(i % 2 ? two.app : one.app, body(ws.channelId), {}, '203.0.113.7')).statusCode)
  t.same(statuses, [201, 201, 201])
  const limited = await boot(two.app, body(ws.channelId), {}, '203.0.113.7')
  t.equal(limited.statusCode, 429, 'the fourth call in the minute, on the other replica')
  t.match(limited.json(), { statusCode: 429, error: 'Too Many Requests', code: 'RATE_LIMITED' })
  const retryAfter = Number(limited.headers['retry-after'])
  t.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${limited.headers['retry-after']}`)
  t.equal((await boot(one.app, body(ws.channelId), {}, '203.0.113.7')).statusCode, 429, 'and on the first replica')
  t.equal((await boot(one.app, body(ws.channelId), {}, '198.51.100.9')).statusCode, 201, 'another address has its own budget')
  t.equal((await boot(one.app, body(other.id), {}, '203.0.113.7')).statusCode, 201, 'another channel has its own budget')
  const [{ n }] = await one.app.deps.sql`SELECT count(*)::int AS n FROM guests`
  t.equal(n, 5, 'refused calls wrote nothing')
})

t.test('secrets stay out of the log and of error bodies', async (t) => {
  const { app, rawLog } = await build(t, { captureLogs: true })
  const ws = await seedWorkspace(app)
  const locked = await addChannel(app, ws.workspaceId, { requireChannelToken: true })
  const email = 'log@example.test'
  const ok = await boot(app, { channelId: locked.id, name: 'L', email, identityHash: identityHash(locked.identitySecret, email) }, { 'x-channel-token': locked.channelToken })
  t.equal(ok.statusCode, 201)
  const session = ok.json().visitorSession
  const resumed = await boot(app, { channelId: locked.id, name: 'L', email }, { 'x-channel-token': locked.channelToken, 'x-visitor-session': session })
  t.equal(resumed.statusCode, 200)
  const refused = await boot(app, { channelId: locked.id, name: 'L', email }, { 'x-channel-token': `${locked.channelToken}x` })
  t.equal(refused.statusCode, 401)
  t.notMatch(refused.body, locked.channelToken)
  const log = rawLog()
  t.match(log, /request completed/, 'the requests were logged')
  for (const secret of [locked.channelToken, locked.identitySecret, session]) t.notMatch(log, secret)
})
