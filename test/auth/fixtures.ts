import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose'
import type { App } from '../../src/app.js'
import { build, type TestContext } from '../helper.js'

/**
 * A real identity provider stand-in: an HTTP server on 127.0.0.1 publishing a JWKS with one
 * RS256 key (published without `alg`, as some providers do, so algorithm confusion is not
 * stopped by an alg match) and one ES256 key. Counts JWKS fetches. Its JWKS endpoint can be
 * made to hang (accept and never answer) or fail (500), and new keys can be published.
 */
export interface Idp {
  jwksUrl: string
  issuer: string
  audience: string
  fetches: () => number
  rsaPublicPem: string
  /** 'ok' serves the JWKS; 'stall' accepts the request and never answers; 'error' answers 500. */
  setMode(mode: 'ok' | 'stall' | 'error'): void
  /** Publishes a new RS256 key under `kid` (a key rotation) and returns its private key. */
  publishKey(kid: string): Promise<CryptoKey>
  sign(opts: {
    alg?: 'RS256' | 'ES256'
    kid?: string
    claims?: JWTPayload
    sub?: string | null
    iss?: string | null
    aud?: string | null
    exp?: number | null
    nbf?: number
    key?: CryptoKey
  }): Promise<string>
}

export async function startIdp(t: TestContext): Promise<Idp> {
  const rsa = await generateKeyPair('RS256', { extractable: true })
  const ec = await generateKeyPair('ES256', { extractable: true })
  const rsaJwk = { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1', use: 'sig' }
  const ecJwk = { ...(await exportJWK(ec.publicKey)), kid: 'ec-1', alg: 'ES256', use: 'sig' }
  const keys: Record<string, unknown>[] = [rsaJwk, ecJwk]
  let fetches = 0
  let mode: 'ok' | 'stall' | 'error' = 'ok'
  const server: Server = createServer((req, res) => {
    if (req.url === '/.well-known/jwks.json') {
      fetches++
      if (mode === 'stall') return // the socket stays open, nothing is ever written
      if (mode === 'error') return void res.writeHead(500).end('upstream trouble')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ keys }))
      return
    }
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    server.closeAllConnections() // stalled requests would hold close() forever
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const issuer = `${origin}/`
  const audience = 'parley-api'
  const now = () => Math.floor(Date.now() / 1000)
  return {
    jwksUrl: `${origin}/.well-known/jwks.json`,
    issuer,
    audience,
    fetches: () => fetches,
    rsaPublicPem: await exportSPKI(rsa.publicKey),
    setMode: (m) => {
      mode = m
    },
    async publishKey(kid) {
      const pair = await generateKeyPair('RS256', { extractable: true })
      keys.push({ ...(await exportJWK(pair.publicKey)), kid, use: 'sig' })
      return pair.privateKey
    },
    async sign(o) {
      const alg = o.alg ?? 'RS256'
      const payload: JWTPayload = { name: 'Ida Member', email: 'ida@example.test', ...o.claims }
      if (o.sub !== null) payload.sub = o.sub ?? 'idp|ida'
      if (o.iss !== null) payload.iss = o.iss ?? issuer
      if (o.aud !== null) payload.aud = o.aud ?? audience
      if (o.exp !== null) payload.exp = o.exp ?? now() + 3600
      if (o.nbf !== undefined) payload.nbf = o.nbf
      payload.iat = now()
      const key = o.key ?? (alg === 'RS256' ? rsa.privateKey : ec.privateKey)
      return new SignJWT(payload).setProtectedHeader({ alg, kid: o.kid ?? (alg === 'RS256' ? 'rsa-1' : 'ec-1') }).sign(key)
    },
  }
}

const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')

/** An unsigned token (`alg: none`), optionally with an empty signature segment. */
export function unsignedToken(payload: Record<string, unknown>, header: Record<string, unknown> = { alg: 'none', typ: 'JWT' }) {
  return `${b64url(header)}.${b64url(payload)}.`
}

/** An HS256 token signed with an arbitrary secret (e.g. the provider's public key PEM). */
export async function hs256Token(secret: string, payload: JWTPayload, kid?: string) {
  return new SignJWT(payload).setProtectedHeader({ alg: 'HS256', ...(kid ? { kid } : {}) }).sign(new TextEncoder().encode(secret))
}

/**
 * The app with two probe routes added before it is ready, to test plugins/auth.ts on route
 * kinds this area does not serve itself (visitor-only, member-or-visitor): each answers the
 * caller the context carries.
 */
export async function buildProbeApp(t: TestContext, env: Record<string, string | undefined> = {}): Promise<App> {
  const { app } = await build(t, {
    env,
    register: (app) => {
      app.get('/probe/visitor', { config: { access: { visitor: true } } }, async (request) => ({ caller: request.ctx.caller }))
      app.get('/probe/either', { config: { access: { member: 'conversations:read', visitor: true } } }, async (request) => {
        const c = request.ctx.caller
        return { member: c.kind === 'member' ? c.userId : null, visitor: c.kind === 'visitor' ? c.guestId : null }
      })
    },
  })
  return app
}
