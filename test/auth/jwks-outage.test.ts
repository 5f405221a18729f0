import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { generateKeyPair } from 'jose'
import t from 'tap'
import { build, type TestContext } from '../helper.js'
import { UNKNOWN_KID_COOLDOWN_MS } from '../../src/auth/tokens.js'
import { refusal, startGateway, testDatabaseAndPrefix } from '../gateway/fixtures.js'
import { startIdp, type Idp } from './fixtures.js'

// API.md section 8: fetching the JWKS has a timeout (AUTH_JWKS_TIMEOUT_MS). A member request
// that needs a key the provider cannot deliver in time gets 503 IDP_UNAVAILABLE, never a hung
// request and never a 401 for a key that could not be fetched; cached keys keep working.

const TIMEOUT_MS = 400
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const pastCooldown = () => sleep(UNKNOWN_KID_COOLDOWN_MS + 150)

/** The request's answer, or a failure if it is still hanging after `ms`. */
async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still hanging after ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([work, hung])
  } finally {
    clearTimeout(timer)
  }
}

async function setup(t: TestContext, idp: Idp) {
  const { app } = await build(t, {
    env: {
      AUTH_JWT_SECRET: undefined,
      AUTH_JWKS_URL: idp.jwksUrl,
      AUTH_ISSUER: idp.issuer,
      AUTH_AUDIENCE: idp.audience,
      AUTH_JWKS_TIMEOUT_MS: String(TIMEOUT_MS),
    },
  })
  const workspaceId = randomUUID()
  await app.deps.sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'JWKS Co')`
  await app.deps.sql`INSERT INTO members (workspace_id, user_id, name, email, role) VALUES (${workspaceId}, 'idp|ida', 'Ida', 'ida@example.test', 'owner')`
  const call = async (token: string) => {
    const started = performance.now()
    const res = await within(
      10_000,
      app.inject({ method: 'GET', url: '/auth/members', headers: { authorization: `Bearer ${token}`, 'x-workspace-id': workspaceId } }),
    )
    return { res, ms: performance.now() - started }
  }
  return { app, call }
}
t.test('a hung identity provider: 503 IDP_UNAVAILABLE within the timeout, never a hung request', async (t) => {
  const idp = await startIdp(t)
  idp.setMode('stall')
  const { call } = await setup(t, idp)

  const first = await call(await idp.sign({}))
  t.equal(first.res.statusCode, 503, 'no key could be fetched: 503, not 401')
  t.same(first.res.json(), {
    statusCode: 503,
    error: 'Service Unavailable',
    code: 'IDP_UNAVAILABLE',
    message: 'The identity provider is unavailable; retry later',
  })
  t.equal(first.res.headers['retry-after'], '5')
  t.ok(first.ms >= TIMEOUT_MS - 50 && first.ms < TIMEOUT_MS + 1500, `answered after the ${TIMEOUT_MS} ms timeout (${Math.round(first.ms)} ms)`)
  t.equal(idp.fetches(), 1)

  // Within the cooldown, more requests do not each wait for (or cause) another fetch.
  const fetches = idp.fetches()
  for (let i = 0; i < 5; i++) {
    const again = await call(await idp.sign({ claims: { jti: `again-${i}` } }))
    t.equal(again.res.statusCode, 503)
    t.ok(again.ms < 200, `answered at once during the cooldown (${Math.round(again.ms)} ms)`)
  }
  t.equal(idp.fetches(), fetches, 'no fetch during the cooldown')

  // A provider answering errors is unavailable too.
  idp.setMode('error')
  await pastCooldown()
  const failing = await call(await idp.sign({ claims: { jti: 'failing' } }))
  t.equal(failing.res.statusCode, 503, 'a provider answering 500: 503 too')
  t.equal(failing.res.json().code, 'IDP_UNAVAILABLE')

  // The provider comes back: the next request after the cooldown fetches and passes.
  idp.setMode('ok')
  await pastCooldown()
  const back = await call(await idp.sign({ claims: { jti: 'back' } }))
  t.equal(back.res.statusCode, 200, 'works again once the provider answers')
})

t.test('cached keys keep working while the provider is down; keys it cannot deliver are 503, not 401', async (t) => {
  const idp = await startIdp(t)
  const { call } = await setup(t, idp)
  t.equal((await call(await idp.sign({ alg: 'RS256' }))).res.statusCode, 200, 'RS256 key fetched and cached')
  t.equal((await call(await idp.sign({ alg: 'ES256' }))).res.statusCode, 200, 'ES256 from the same set')

  idp.setMode('stall')
  await pastCooldown()
  const fetches = idp.fetches()
  for (const alg of ['RS256', 'ES256'] as const) {
    const cached = await call(await idp.sign({ alg, claims: { jti: `down-${alg}` } }))
    t.equal(cached.res.statusCode, 200, `${alg}: a cached key works while the provider hangs`)
    t.ok(cached.ms < 500, `${alg}: without waiting for it (${Math.round(cached.ms)} ms)`)
  }
  t.equal(idp.fetches(), fetches, 'known keys cause no fetch')

  const other = await generateKeyPair('RS256')
  const unknown = await call(await idp.sign({ kid: 'rotated-in', key: other.privateKey }))
  t.equal(unknown.res.statusCode, 503, 'a kid the provider could not deliver: 503')
  t.equal(unknown.res.json().code, 'IDP_UNAVAILABLE')
  t.ok(unknown.ms < TIMEOUT_MS + 1500, `within the timeout (${Math.round(unknown.ms)} ms)`)

  // Back up with a rotated key: it is fetched and accepted; a kid it does not publish is a
  // plain 401 (the set was just fetched, so no new fetch is made for it either).
  idp.setMode('ok')
  const rotated = await idp.publishKey('rsa-2')
  await pastCooldown()
  t.equal((await call(await idp.sign({ kid: 'rsa-2', key: rotated }))).res.statusCode, 200, 'the rotated key is fetched')
  const bad = await call(await idp.sign({ kid: 'never-published', key: other.privateKey }))
  t.equal(bad.res.statusCode, 401, 'a kid the provider does not publish: 401')
})

t.test('an unknown kid during the cooldown: 503 after a failed fetch, 401 after a successful one', async (t) => {
  const idp = await startIdp(t)
  const { call } = await setup(t, idp)
  const stranger = await generateKeyPair('RS256')
  const unknownKid = async (kid: string) => call(await idp.sign({ kid, key: stranger.privateKey }))

  // A set is in use (its keys keep working below), so an answer from it would be a 401.
  t.equal((await call(await idp.sign({}))).res.statusCode, 200)
  t.equal(idp.fetches(), 1)

  // Just after a SUCCESSFUL fetch: the set was just read and lacks the kid: 401, no new fetch.
  let res = await unknownKid('after-success')
  t.equal(res.res.statusCode, 401, 'the provider just published its set without this kid: 401')
  t.equal(idp.fetches(), 1, 'no fetch during the cooldown')

  // The provider hangs; a new kid waits for one fetch, which fails: 503.
  idp.setMode('stall')
  await pastCooldown()
  res = await unknownKid('during-outage-1')
  t.equal(res.res.statusCode, 503)
  t.equal(idp.fetches(), 2)

  // Just after a FAILED fetch: never-seen kids are 503 at once (the key may well exist), not a
  // 401 from the older set still in use, and cause no fetch.
  for (const kid of ['during-outage-2', 'during-outage-3', 'during-outage-1']) {
    res = await unknownKid(kid)
    t.equal(res.res.statusCode, 503, `${kid}: 503, not 401`)
    t.equal(res.res.json().code, 'IDP_UNAVAILABLE')
    t.equal(res.res.headers['retry-after'], '5', 'Retry-After: past the cooldown and one fetch timeout')
    t.ok(res.ms < 200, `answered at once (${Math.round(res.ms)} ms)`)
  }
  t.equal(idp.fetches(), 2, 'no fetch during the cooldown')
  t.equal((await call(await idp.sign({ claims: { jti: 'still-known' } }))).res.statusCode, 200, 'the known key still works')

  // Back up: the next unknown kid after the cooldown fetches; the set lacks it: 401, and 401
  // again during the cooldown that follows this successful fetch.
  idp.setMode('ok')
  await pastCooldown()
  t.equal((await unknownKid('after-recovery')).res.statusCode, 401)
  t.equal(idp.fetches(), 3)
  t.equal((await unknownKid('after-recovery-2')).res.statusCode, 401)
  t.equal(idp.fetches(), 3)
})

t.test('the gateway handshake names the identity provider failure', async (t) => {
  const idp = await startIdp(t)
  idp.setMode('stall')
  const { databaseUrl, redisPrefix } = await testDatabaseAndPrefix(t)
  const gateway = await startGateway(t, {
    databaseUrl,
    redisPrefix,
    env: { AUTH_JWKS_URL: idp.jwksUrl, AUTH_ISSUER: idp.issuer, AUTH_AUDIENCE: idp.audience, AUTH_JWKS_TIMEOUT_MS: String(TIMEOUT_MS) },
  })
  const started = performance.now()
  const err = await within(10_000, refusal(t, gateway.url, { token: await idp.sign({}), workspaceId: randomUUID() }))
  t.equal(err.message, 'IDP_UNAVAILABLE', 'connect_error names the reason')
  t.match(err.data, { code: 'IDP_UNAVAILABLE', message: /identity provider/ })
  t.ok(performance.now() - started < TIMEOUT_MS + 3000, 'refused within the timeout, not hung')
})
