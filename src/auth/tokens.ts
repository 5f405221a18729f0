import { KeyObject } from 'node:crypto'
import { createSigner, createVerifier, type DecodedJwt, type VerifierOptions } from 'fast-jwt'
import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors } from 'jose'
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

export class TokenError extends Error {
  /** True when the token was authentic but has expired (POST /auth then just starts afresh). */
  expired = false
}

/**
 * The identity provider's keys could not be fetched in time (down, hung, or answering errors):
 * the API answers 503 IDP_UNAVAILABLE and the gateway refuses the handshake naming it, never as
 * if the token were bad.
 */
export class IdpUnavailableError extends Error {}

export interface MemberClaims {
  sub: string
  name?: string
  email?: string
}

export interface VisitorClaims {
  guestId: string
  channelId: string
  workspaceId: string
  /** The channel's session epoch when the session was signed (0 in sessions older than the claim). */
  epoch: number
  exp: number
}

export type MemberVerifier = (token: string) => Promise<MemberClaims>

/** Asymmetric algorithms accepted from the identity provider; everything else is refused before any key lookup. */
export const JWKS_ALGORITHMS = ['RS256', 'ES256'] as const
const CLOCK_TOLERANCE_MS = 5_000
/**
 * After a JWKS fetch (or a failed one), a kid the set does not hold is answered without another
 * fetch for this long: 401 after a fetch that did not have it, 503 after a fetch that failed.
 * Garbage tokens with random kids would otherwise become one request to the provider each.
 */
export const UNKNOWN_KID_COOLDOWN_MS = 2_000
/** How long a fetched set is used before a key lookup refreshes it (in the background). */
export const JWKS_MAX_AGE_MS = 10 * 60_000

/**
 * The identity provider's signing keys as PEM (what fast-jwt takes), from its JWKS.
 * jose's remote set does the fetching (an AbortSignal timeout of AUTH_JWKS_TIMEOUT_MS around the
 * whole request, one fetch at a time, the set validated) and its local set the key selection
 * (kid, alg, kty, use); get-jwks was dropped because its fetch had no effective timeout.
 * - A kid in the last fetched set is answered from it at once, even when the provider is down:
 *   a set older than JWKS_MAX_AGE_MS is refreshed in the background, never waited for.
 * - A kid not in it waits for one fetch (bounded by the timeout); the cooldown above keeps
 *   floods of random kids from turning into fetches.
 */
function createJwksKeys(url: URL, timeoutMs: number) {
  const remote = createRemoteJWKSet(url, { timeoutDuration: timeoutMs })
  let local: ReturnType<typeof createLocalJWKSet> | undefined
  /** When the set in use was fetched (its age decides a background refresh). */
  let fetchedAt = -Infinity
  /**
   * How the last fetch ended, and when. Within the cooldown an unknown kid is answered from it:
   * 401 when it delivered a set without the kid, 503 when it failed (the key may exist; it
   * could not be fetched), even though an older set is still in use for known kids.
   */
  let last: { at: number; ok: boolean } = { at: -Infinity, ok: true }
  let pending: Promise<void> | undefined
  const pems = new WeakMap<object, string>()

  const refresh = () =>
    (pending ??= remote
      .reload()
      .then(() => {
        local = createLocalJWKSet(remote.jwks()!)
        fetchedAt = Date.now()
        last = { at: fetchedAt, ok: true }
      })
      // After the success step too: a set that was fetched but cannot be used is a failed fetch.
      .catch((err: unknown) => {
        last = { at: Date.now(), ok: false }
        throw new IdpUnavailableError(`identity provider keys unavailable: ${(err as Error).message}`)
      })
      .finally(() => {
        pending = undefined
      }))

  const pemOf = (key: CryptoKey) => {
    let pem = pems.get(key)
    if (!pem) pems.set(key, (pem = KeyObject.from(key).export({ type: 'spki', format: 'pem' }) as string))
    return pem
  }
  // The key for (alg, kid) from a set, or null when the set has none; other refusals are the token's fault.
  const lookup = async (set: NonNullable<typeof local>, alg: string, kid: string) => {
    try {
      return pemOf(await set({ alg, kid }))
    } catch (err) {
      if (err instanceof joseErrors.JWKSNoMatchingKey) return null
      throw new TokenError(`no usable key for kid ${kid}: ${(err as Error).message}`)
    }
  }

  return {
    async publicKey(alg: string, kid: string): Promise<string> {
      const now = Date.now()
      const known = local && (await lookup(local, alg, kid))
      const coolingDown = now - last.at < UNKNOWN_KID_COOLDOWN_MS
      if (known) {
        if (now - fetchedAt > JWKS_MAX_AGE_MS && !coolingDown) refresh().catch(() => {})
        return known
      }
      if (coolingDown && !last.ok) throw new IdpUnavailableError('identity provider keys unavailable (the last fetch failed)')
      if (coolingDown) throw new TokenError('unknown kid')
      await refresh()
      const fetched = await lookup(local!, alg, kid)
      if (!fetched) throw new TokenError('unknown kid')
      return fetched
    },
  }
}

function isVisitorClaims(claims: Record<string, unknown>): boolean {
  const aud = claims.aud
  return aud === VISITOR_AUDIENCE || (Array.isArray(aud) && aud.includes(VISITOR_AUDIENCE)) || 'guestId' in claims
}

/**
 * How a member token is verified, the one definition of it: fast-jwt's options and the key. The
 * API hands them to @fastify/jwt (plugins/jwt.ts), which builds its verifier from them; the
 * gateway, outside Fastify, builds the same fast-jwt verifier from them (createMemberVerifier).
 * Both then apply memberVerifierOf's claim checks.
 */
export interface MemberTokenOptions {
  /** AUTH_JWT_SECRET (HS256), or the key of the JWKS for the token's (alg, kid). */
  key: string | ((decoded: DecodedJwt) => Promise<string>)
  /** fast-jwt's verifier options without the key (@fastify/jwt's `verify` option). */
  verify: Omit<Partial<VerifierOptions>, 'key'>
}

export function memberTokenOptions(config: Config): MemberTokenOptions {
  // fast-jwt skips allowedIss/allowedAud when the claim is absent: a configured issuer or
  // audience must therefore also be a required claim, or a token without it would pass.
  const requiredClaims = ['sub', 'exp']
  if (config.AUTH_ISSUER) requiredClaims.push('iss')
  if (config.AUTH_AUDIENCE) requiredClaims.push('aud')
  const common = {
    cache: 1000,
    cacheTTL: 60_000,
    clockTolerance: CLOCK_TOLERANCE_MS,
    // Refusals are remembered briefly (cheap answer to a replayed bad token), except key-fetch
    // failures: an identity provider that was down for a moment must not lock a valid token out.
    errorCacheTTL: (err: { code?: string }) => (err.code === 'FAST_JWT_KEY_FETCHING_ERROR' ? -CLOCK_TOLERANCE_MS - 1 : 0),
    requiredClaims,
    ...(config.AUTH_ISSUER ? { allowedIss: config.AUTH_ISSUER } : {}),
    ...(config.AUTH_AUDIENCE ? { allowedAud: config.AUTH_AUDIENCE } : {}),
  }
  if (!config.AUTH_JWKS_URL) return { key: config.AUTH_JWT_SECRET!, verify: { ...common, algorithms: ['HS256'] } }
  const keys = createJwksKeys(new URL(config.AUTH_JWKS_URL), config.AUTH_JWKS_TIMEOUT_MS)
  return {
    verify: { ...common, algorithms: [...JWKS_ALGORITHMS] },
    key: async (decoded: DecodedJwt) => {
      const { kid, alg } = decoded.header as { kid?: unknown; alg?: unknown }
      // alg:none, HS256 (the public key used as an HMAC secret) and anything else stop here,
      // before a key is looked up; fast-jwt checks the algorithm against the key again.
      if (typeof alg !== 'string' || !(JWKS_ALGORITHMS as readonly string[]).includes(alg)) {
        throw new TokenError(`algorithm ${String(alg)} is not accepted`)
      }
      if (typeof kid !== 'string' || kid === '' || kid.length > 256) throw new TokenError('token has no usable kid')
      return keys.publicKey(alg, kid)
    },
  }
}

/**
 * A member verifier from a fast-jwt verifier built on memberTokenOptions: an unreachable identity
 * provider stays IdpUnavailableError, every other refusal is a TokenError, and a visitor session
 * or a token without a usable sub is refused.
 */
export function memberVerifierOf(verify: (token: string) => unknown): MemberVerifier {
  return async (token) => {
    let claims: Record<string, unknown>
    try {
      claims = (await verify(token)) as Record<string, unknown>
    } catch (err) {
      // fast-jwt wraps what the key callback throws; an unreachable provider is not a bad token.
      const cause = (err as { originalError?: unknown }).originalError
      if (cause instanceof IdpUnavailableError) throw cause
      throw new TokenError((err as Error).message)
    }
    if (isVisitorClaims(claims)) throw new TokenError('a visitor session is not a member token')
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

/** The member verifier outside Fastify (the gateway, scripts): fast-jwt built on memberTokenOptions. */
export function createMemberVerifier(config: Config): MemberVerifier {
  const { key, verify } = memberTokenOptions(config)
  return memberVerifierOf(typeof key === 'string' ? createVerifier({ ...verify, key }) : createVerifier({ ...verify, key }))
}

export interface VisitorTokens {
  sign(claims: Omit<VisitorClaims, 'exp' | 'epoch'> & { epoch?: number }): { token: string; expiresAt: string }
  verify(token: string): VisitorClaims
}

export function createVisitorTokens(config: Config): VisitorTokens {
  // exp is set here rather than through expiresIn, so expiresAt in the answer is the token's own.
  const signer = createSigner({ algorithm: 'HS256', key: config.VISITOR_SESSION_SECRET, aud: VISITOR_AUDIENCE, iss: VISITOR_ISSUER })
  const verifier = createVerifier({
    algorithms: ['HS256'],
    key: config.VISITOR_SESSION_SECRET,
    allowedAud: VISITOR_AUDIENCE,
    allowedIss: VISITOR_ISSUER,
    requiredClaims: ['guestId', 'channelId', 'workspaceId', 'exp', 'aud', 'iss'],
    cache: 1000,
  })
  return {
    sign(claims) {
      const exp = Math.floor(Date.now() / 1000) + config.VISITOR_SESSION_TTL_S
      const token = signer({ guestId: claims.guestId, channelId: claims.channelId, workspaceId: claims.workspaceId, epoch: claims.epoch ?? 0, exp })
      return { token, expiresAt: new Date(exp * 1000).toISOString() }
    },
    verify(token) {
      let c: Record<string, unknown>
      try {
        c = verifier(token) as Record<string, unknown>
      } catch (err) {
        const e = new TokenError((err as Error).message)
        e.expired = (err as { code?: string }).code === 'FAST_JWT_EXPIRED'
        throw e
      }
      const { guestId, channelId, workspaceId, exp } = c
      const epoch = c.epoch ?? 0
      if (typeof guestId !== 'string' || typeof channelId !== 'string' || typeof workspaceId !== 'string' || typeof exp !== 'number' || !Number.isInteger(epoch)) {
        throw new TokenError('visitor session has malformed claims')
      }
      return { guestId, channelId, workspaceId, epoch: epoch as number, exp }
    },
  }
}
