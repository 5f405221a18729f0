import fastifyJwt from '@fastify/jwt'
import fp from 'fastify-plugin'
import { memberTokenOptions } from '../src/auth/tokens.js'

/**
 * Member tokens are verified by @fastify/jwt, registered in verify-only mode (a public key or
 * secret, no signer: Parley never signs member tokens) with the options and key of
 * memberTokenOptions (src/auth/tokens.ts), the same ones the gateway builds its fast-jwt verifier
 * from. Only `app.jwt.verify` is used, by plugins/deps.ts for `ctx.memberTokens`: plugins/auth.ts
 * reads the Bearer token itself (API.md's rules) and src/auth/callers.ts decides the answer, as
 * for a socket handshake. Nothing calls request.jwtVerify (scripts/check-layers.ts).
 */
export default fp(
  async (app) => {
    const { key, verify } = memberTokenOptions(app.config)
    await app.register(fastifyJwt, { secret: { public: key }, verify })
  },
  { name: 'jwt', dependencies: ['config'] },
)
