/**
 * Member-token verifications per second, for the verifier the gateway builds
 * (createMemberVerifier) and the one the API uses (`app.jwt.verify` of @fastify/jwt, registered
 * by plugins/jwt.ts from the same options, as plugins/deps.ts wraps it). Four cases: HS256 (AUTH_JWT_SECRET) and RS256 through
 * a JWKS served on 127.0.0.1, each with one token verified again and again (fast-jwt's cache)
 * and with a fresh token each time (a signature check every time).
 *
 *   node --import tsx bench/member-tokens.ts            (N=20000 per case)
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import jwtPlugin from '../plugins/jwt.js'
import { createMemberVerifier, memberVerifierOf, type MemberVerifier } from '../src/auth/tokens.js'
import { loadConfig, type Config } from '../src/config.js'
import { testEnv, TEST_JWT_SECRET } from '../test/helper.js'

const N = Number(process.env.N ?? 20_000)

const rsa = await generateKeyPair('RS256', { extractable: true })
const jwk = { ...(await exportJWK(rsa.publicKey)), kid: 'k1', use: 'sig' }
const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] })))
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
const jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`

const exp = Math.floor(Date.now() / 1000) + 3600
const hs = (i: number) => new SignJWT({ n: i }).setProtectedHeader({ alg: 'HS256' }).setSubject(`u${i}`).setExpirationTime(exp).sign(new TextEncoder().encode(TEST_JWT_SECRET))
const rs = (i: number) => new SignJWT({ n: i }).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setSubject(`u${i}`).setIssuer('https://idp.example/').setAudience('parley-api').setExpirationTime(exp).sign(rsa.privateKey)

const configs: Record<'HS256' | 'RS256', Config> = {
  HS256: loadConfig(testEnv({ DATABASE_URL: 'postgres://127.0.0.1/x' })),
  RS256: loadConfig(testEnv({ DATABASE_URL: 'postgres://127.0.0.1/x', AUTH_JWT_SECRET: undefined, AUTH_JWKS_URL: jwksUrl, AUTH_ISSUER: 'https://idp.example/', AUTH_AUDIENCE: 'parley-api' })),
}

/** The API's verifier: @fastify/jwt registered by plugins/jwt.ts, wrapped as plugins/deps.ts does. */
async function apiVerifier(config: Config): Promise<MemberVerifier> {
  const app = Fastify()
  await app.register(fp(async (a) => void a.decorate('config', config), { name: 'config' }))
  await app.register(jwtPlugin)
  await app.ready()
  return memberVerifierOf((token) => app.jwt.verify(token))
}

async function rate(verify: MemberVerifier, tokens: string[]): Promise<number> {
  await verify(tokens[0]) // the first JWKS fetch is not what is measured
  const start = process.hrtime.bigint()
  for (let i = 0; i < N; i++) await verify(tokens[i % tokens.length])
  return Math.round(N / (Number(process.hrtime.bigint() - start) / 1e9))
}

const rows: string[] = []
for (const alg of ['HS256', 'RS256'] as const) {
  const sign = alg === 'HS256' ? hs : rs
  const one = [await sign(0)]
  const fresh = await Promise.all(Array.from({ length: N }, (_, i) => sign(i + 1)))
  const gateway = createMemberVerifier(configs[alg])
  const api = await apiVerifier(configs[alg])
  for (const [name, tokens] of [['same token', one], ['fresh tokens', fresh]] as const) {
    // Alternated three times, the best of each kept: the machine's other load and JIT warm-up
    // otherwise decide which verifier looks faster.
    let g = 0
    let a = 0
    for (let round = 0; round < 3; round++) {
      g = Math.max(g, await rate(gateway, tokens))
      a = Math.max(a, await rate(api, tokens))
    }
    rows.push(`${alg} ${name}: createMemberVerifier (gateway) ${g}/s, app.jwt.verify (API, @fastify/jwt) ${a}/s`)
  }
}
console.log(rows.join('\n'))
server.close()
