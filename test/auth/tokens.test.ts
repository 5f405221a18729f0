import { randomUUID } from 'node:crypto'
import t from 'tap'
import { build, memberToken, seedGuest, seedWorkspace, TEST_VISITOR_SECRET } from '../helper.js'
import { buildProbeApp, hs256Token, startIdp, unsignedToken } from './fixtures.js'

const now = () => Math.floor(Date.now() / 1000)

t.test('member JWTs through a real JWKS (RS256/ES256): the token matrix', async (t) => {
  const idp = await startIdp(t)
  const { app } = await build(t, {
    env: { AUTH_JWT_SECRET: undefined, AUTH_JWKS_URL: idp.jwksUrl, AUTH_ISSUER: idp.issuer, AUTH_AUDIENCE: idp.audience },
  })
  // The member 'idp|ida' owns a workspace, so the membership step is reached by valid tokens.
  const workspaceId = randomUUID()
  await app.deps.sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'JWKS Co')`
  await app.deps.sql`INSERT INTO members (workspace_id, user_id, name, email, role) VALUES (${workspaceId}, 'idp|ida', 'Ida', 'ida@example.test', 'owner')`

  const call = (token: string) =>
    app.inject({ method: 'GET', url: '/auth/members', headers: { authorization: `Bearer ${token}`, 'x-workspace-id': workspaceId } })
  const refused = async (name: string, token: string) => {
    const res = await call(token)
    t.equal(res.statusCode, 401, `${name}: 401`)
    t.match(res.json(), { statusCode: 401, error: 'Unauthorized', code: 'UNAUTHENTICATED' }, `${name}: contract body`)
  }

  // Valid keys first: they are then cached, and the unknown-kid cooldown below cannot touch them.
  const rs = await call(await idp.sign({ alg: 'RS256' }))
  t.equal(rs.statusCode, 200, 'valid RS256 passes')
  t.equal(rs.json().total, 1)
  const es = await call(await idp.sign({ alg: 'ES256' }))
  t.equal(es.statusCode, 200, 'valid ES256 passes')
  const wsList = await app.inject({ method: 'GET', url: '/workspaces', headers: { authorization: `Bearer ${await idp.sign({})}` } })
  t.equal(wsList.statusCode, 200)
  t.equal(wsList.json().data[0].id, workspaceId)

  await refused('expired', await idp.sign({ exp: now() - 60 }))
  await refused('not yet valid (nbf in a minute)', await idp.sign({ nbf: now() + 60 }))
  await refused('wrong issuer', await idp.sign({ iss: 'https://evil.example/' }))
  await refused('no issuer', await idp.sign({ iss: null }))
  await refused('wrong audience', await idp.sign({ aud: 'another-api' }))
  await refused('no audience', await idp.sign({ aud: null }))
  await refused('no exp', await idp.sign({ exp: null }))
  await refused('no sub', await idp.sign({ sub: null }))
  const claims = { sub: 'idp|ida', iss: idp.issuer, aud: idp.audience, exp: now() + 3600 }
  await refused('alg:none', unsignedToken(claims))
  await refused('alg:none with a known kid', unsignedToken(claims, { alg: 'none', kid: 'rsa-1' }))
  await refused('HS256 signed with the public key (kid of the RSA key)', await hs256Token(idp.rsaPublicPem, claims, 'rsa-1'))
  await refused('HS256 signed with the public key (no kid)', await hs256Token(idp.rsaPublicPem, claims))
  await refused('HS256 with the dev secret while JWKS is configured', await memberToken('idp|ida'))
  await refused('garbage', 'not.a.jwt')
  await refused('garbage (random base64)', Buffer.from('x'.repeat(90)).toString('base64url'))
  // A visitor session Parley signed itself is not a member token.
  await refused('visitor token as member token', app.deps.visitorTokens.sign({ guestId: randomUUID(), channelId: randomUUID(), workspaceId }).token)
  // Right kid, another key: the signature does not verify.
  const { generateKeyPair } = await import('jose')
  const other = await generateKeyPair('RS256')
  await refused('known kid, signed by another key', await idp.sign({ key: other.privateKey }))

  const before = idp.fetches()
  await refused('unknown kid', await idp.sign({ kid: 'rotated-away', key: other.privateKey }))
  // A burst of random kids does not turn into one JWKS request each.
  for (let i = 0; i < 15; i++) await refused(`random kid ${i}`, await idp.sign({ kid: `k${i}`, key: other.privateKey }))
  t.ok(idp.fetches() - before <= 2, `unknown kids refetched the JWKS ${idp.fetches() - before} times (at most 2)`)
  // Known keys keep working during the cooldown.
  t.equal((await call(await idp.sign({ alg: 'ES256', claims: { jti: 'again' } }))).statusCode, 200, 'valid token still passes')
})

t.test('JWKS configuration must name the issuer and the audience', async (t) => {
  const jwks = { AUTH_JWT_SECRET: undefined, AUTH_JWKS_URL: 'http://127.0.0.1:9/.well-known/jwks.json' }
  await t.rejects(build(t, { env: { ...jwks, AUTH_AUDIENCE: 'api' } }), /AUTH_ISSUER/)
  await t.rejects(build(t, { env: { ...jwks, AUTH_ISSUER: 'https://idp.example/' } }), /AUTH_AUDIENCE/)
})

t.test('HS256 development tokens', async (t) => {
  const { app } = await build(t)
  const ws = await seedWorkspace(app)
  const call = (token: string) =>
    app.inject({ method: 'GET', url: '/auth/members', headers: { authorization: `Bearer ${token}`, 'x-workspace-id': ws.workspaceId } })
  t.equal((await call(ws.agent.token)).statusCode, 200, 'valid HS256 passes')
  t.equal((await call(await memberToken(ws.agent.userId, { expiresIn: now() - 30 }))).statusCode, 401, 'expired')
  t.equal((await call(await memberToken(ws.agent.userId, { secret: 'another-secret-0123456789abcdef' }))).statusCode, 401, 'other secret')
  t.equal((await call(await memberToken(ws.agent.userId, { claims: { nbf: now() + 120 } }))).statusCode, 401, 'nbf in the future')
  t.equal((await call(unsignedToken({ sub: ws.agent.userId, exp: now() + 60 }))).statusCode, 401, 'alg:none')
  // Even signed with the member secret, visitor-shaped claims are refused.
  const visitorShaped = await memberToken(ws.agent.userId, { claims: { aud: 'parley:visitor', guestId: randomUUID() } })
  t.equal((await call(visitorShaped)).statusCode, 401, 'visitor-shaped claims')
  const guest = await seedGuest(app, ws)
  t.equal((await call(guest.session)).statusCode, 401, 'visitor session as Bearer')
  const noBearer = await app.inject({ method: 'GET', url: '/auth/members', headers: { authorization: `Basic abc`, 'x-workspace-id': ws.workspaceId } })
  t.equal(noBearer.statusCode, 401, 'not a Bearer scheme')
  const none = await app.inject({ method: 'GET', url: '/auth/members', headers: { 'x-workspace-id': ws.workspaceId } })
  t.equal(none.statusCode, 401, 'no credentials')
  t.notMatch(none.body, /secret|stack/i)
})

t.test('workspace membership: x-workspace-id', async (t) => {
  const { app } = await build(t)
  const a = await seedWorkspace(app, 'A')
  const b = await seedWorkspace(app, 'B')
  const get = (headers: Record<string, string>) => app.inject({ method: 'GET', url: '/auth/members', headers })
  const missing = await get({ authorization: `Bearer ${a.agent.token}` })
  t.equal(missing.statusCode, 400, 'missing x-workspace-id')
  t.match(missing.json(), { code: 'WORKSPACE_REQUIRED', message: /x-workspace-id/ })
  const other = await get({ authorization: `Bearer ${a.agent.token}`, 'x-workspace-id': b.workspaceId })
  t.equal(other.statusCode, 403)
  t.equal(other.json().code, 'NOT_A_MEMBER', 'member of A asking for B')
  const unknown = await get({ authorization: `Bearer ${a.agent.token}`, 'x-workspace-id': randomUUID() })
  t.same([unknown.statusCode, unknown.json().code], [403, 'NOT_A_MEMBER'], 'unknown workspace looks like any other')
  const malformed = await get({ authorization: `Bearer ${a.agent.token}`, 'x-workspace-id': 'not-a-uuid' })
  t.same([malformed.statusCode, malformed.json().code], [403, 'NOT_A_MEMBER'])
  const stranger = await get({ authorization: `Bearer ${await memberToken('idp|stranger')}`, 'x-workspace-id': a.workspaceId })
  t.same([stranger.statusCode, stranger.json().code], [403, 'NOT_A_MEMBER'])
  const upper = await get({ ...a.agent.headers, 'x-workspace-id': a.workspaceId.toUpperCase() })
  t.equal(upper.statusCode, 200, 'the header is case-insensitive like any uuid')

  const disabled = await a.addMember('agent')
  await app.inject({ method: 'PATCH', url: `/auth/members/${encodeURIComponent(disabled.userId)}`, headers: a.owner.headers, payload: { status: 'disabled' } })
  const res = await get(disabled.headers)
  t.equal(res.statusCode, 403, 'disabled member')
  t.equal(res.json().code, 'MEMBER_DISABLED')
})

t.test('visitor sessions and member tokens are not interchangeable (probe routes)', async (t) => {
  const app = await buildProbeApp(t)
  const ws = await seedWorkspace(app)
  const guest = await seedGuest(app, ws)
  const visitor = await app.inject({ method: 'GET', url: '/probe/visitor', headers: guest.headers })
  t.equal(visitor.statusCode, 200)
  t.same(visitor.json().caller, { kind: 'visitor', guestId: guest.guestId, channelId: ws.channelId, workspaceId: ws.workspaceId })

  const asSession = await app.inject({ method: 'GET', url: '/probe/visitor', headers: { 'x-visitor-session': ws.agent.token } })
  t.equal(asSession.statusCode, 401, 'member token as x-visitor-session')
  const sameSecret = await memberToken(ws.agent.userId, { secret: TEST_VISITOR_SECRET, claims: { guestId: guest.guestId } })
  t.equal(
    (await app.inject({ method: 'GET', url: '/probe/visitor', headers: { 'x-visitor-session': sameSecret } })).statusCode,
    401,
    'a token signed with the visitor secret but without the visitor audience',
  )
  t.equal((await app.inject({ method: 'GET', url: '/probe/visitor', headers: ws.agent.headers })).statusCode, 401, 'Bearer on a visitor-only route')
  t.equal((await app.inject({ method: 'GET', url: '/probe/visitor', headers: { 'x-visitor-session': 'garbage' } })).statusCode, 401)
  t.equal((await app.inject({ method: 'GET', url: '/probe/visitor' })).statusCode, 401, 'nothing')
  const tampered = guest.session.slice(0, -2) + (guest.session.endsWith('AA') ? 'BB' : 'AA')
  t.equal((await app.inject({ method: 'GET', url: '/probe/visitor', headers: { 'x-visitor-session': tampered } })).statusCode, 401, 'tampered')

  const either = await app.inject({ method: 'GET', url: '/probe/either', headers: guest.headers })
  t.same(either.json(), { member: null, visitor: guest.guestId })
  const asMember = await app.inject({ method: 'GET', url: '/probe/either', headers: ws.agent.headers })
  t.same(asMember.json(), { member: ws.agent.userId, visitor: null })
  const sessionAsBearer = await app.inject({ method: 'GET', url: '/probe/either', headers: { authorization: `Bearer ${guest.session}`, 'x-workspace-id': ws.workspaceId } })
  t.equal(sessionAsBearer.statusCode, 401, 'visitor session as Bearer on a member-or-visitor route')
})
