import { createSigner, createVerifier, type DecodedJwt } from 'fast-jwt'
import buildGetJwks from 'get-jwks'
import type { Config } from '../config.js'

/**
 * Token verification shared by the API (plugins/auth.ts) and the gateway (src/gateway), so a
 * socket handshake is checked exactly like an HTTP request.
 *
 * Member tokens come from the identity provider: RS256/ES256 through its JWKS in production,
 * HS256 with AUTH_JWT_SECRET in development. Visitor sessions are HS256 tokens Parley signs
 * itself with VISITOR_SESSION_SECRET and a fixed audience; each verifier refuses the other kind.
 */
export const VISITOR_AUDIENCE = 'parley:visitor'
export const VISITOR_ISSUER = 'parley'

export class TokenError extends Error {}

export interface MemberClaims {
  sub: string
  name?: string
  email?: string
}

export interface VisitorClaims {
  guestId: string
  channelId: string
  workspaceId: string
  exp: number
}

export type MemberVerifier = (token: string) => Promise<MemberClaims>

export function createMemberVerifier(config: Config): MemberVerifier {
  const common = {
    cache: 1000,
    cacheTTL: 60_000,
    clockTolerance: 5_000,
    requiredClaims: ['sub', 'exp'],
    ...(config.AUTH_ISSUER ? { allowedIss: config.AUTH_ISSUER } : {}),
    ...(config.AUTH_AUDIENCE ? { allowedAud: config.AUTH_AUDIENCE } : {}),
  }
  let verify: (token: string) => Promise<Record<string, unknown>>
  if (config.AUTH_JWKS_URL) {
    const url = new URL(config.AUTH_JWKS_URL)
    const jwks = buildGetJwks({
      max: 100,
      ttl: 10 * 60_000,
      jwksPath: url.pathname + url.search,
      issuersWhitelist: [url.origin],
    })
    verify = createVerifier({
      ...common,
      algorithms: ['RS256', 'ES256'],
      key: async (decoded: DecodedJwt) => {
        const { kid, alg } = decoded.header as { kid?: string; alg: string }
        if (!kid) throw new TokenError('token has no kid')
        return jwks.getPublicKey({ domain: url.origin, kid, alg })
      },
    }) as typeof verify
  } else {
    const verifyHs = createVerifier({ ...common, algorithms: ['HS256'], key: config.AUTH_JWT_SECRET! })
    verify = async (token) => verifyHs(token)
  }
  return async (token) => {
    let claims: Record<string, unknown>
    try {
      claims = await verify(token)
    } catch (err) {
      throw new TokenError((err as Error).message)
    }
    const aud = claims.aud
    if (aud === VISITOR_AUDIENCE || (Array.isArray(aud) && aud.includes(VISITOR_AUDIENCE)) || 'guestId' in claims) {
      throw new TokenError('a visitor session is not a member token')
    }
    if (typeof claims.sub !== 'string' || claims.sub.length < 1 || claims.sub.length > 255) {
      throw new TokenError('token has no usable sub')
    }
    return {
      sub: claims.sub,
      name: typeof claims.name === 'string' ? claims.name : undefined,
      email: typeof claims.email === 'string' ? claims.email : undefined,
    }
  }
}

export interface VisitorTokens {
  sign(claims: Omit<VisitorClaims, 'exp'>): { token: string; expiresAt: string }
  verify(token: string): VisitorClaims
}

export function createVisitorTokens(config: Config): VisitorTokens {
  const signer = createSigner({
    algorithm: 'HS256',
    key: config.VISITOR_SESSION_SECRET,
    aud: VISITOR_AUDIENCE,
    iss: VISITOR_ISSUER,
    expiresIn: config.VISITOR_SESSION_TTL_S * 1000,
  })
  const verifier = createVerifier({
    algorithms: ['HS256'],
    key: config.VISITOR_SESSION_SECRET,
    allowedAud: VISITOR_AUDIENCE,
    allowedIss: VISITOR_ISSUER,
    requiredClaims: ['guestId', 'channelId', 'workspaceId', 'exp'],
    cache: 1000,
  })
  return {
    sign(claims) {
      const token = signer({ ...claims })
      const exp = Math.floor(Date.now() / 1000) + config.VISITOR_SESSION_TTL_S
      return { token, expiresAt: new Date(exp * 1000).toISOString() }
    },
    verify(token) {
      try {
        const c = verifier(token) as VisitorClaims
        return { guestId: c.guestId, channelId: c.channelId, workspaceId: c.workspaceId, exp: c.exp }
      } catch (err) {
        throw new TokenError((err as Error).message)
      }
    },
  }
}
