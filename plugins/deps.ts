import fp from 'fastify-plugin'
import { memberVerifierOf } from '../src/auth/tokens.js'
import type { Deps } from '../src/context.js'
import { createDeps } from '../src/deps.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The process's infrastructure (src/deps.ts): what routes hand to domain code. */
    deps: Deps
  }
}

/**
 * Wraps createDeps into the app's lifecycle: built at start (which waits for PostgreSQL and
 * Redis), workers stopped before the server stops accepting (preClose: an active job finishes
 * while the pool is open), connections closed after the last request.
 */
export default fp(
  async (app) => {
    // Member tokens through @fastify/jwt (plugins/jwt.ts), checked like the gateway's.
    const memberTokens = memberVerifierOf((token) => app.jwt.verify(token))
    const runtime = await createDeps(app.config, app.log, { memberTokens })
    app.decorate('deps', runtime.deps)
    app.addHook('preClose', () => runtime.drain())
    app.addHook('onClose', () => runtime.close())
  },
  { name: 'deps', dependencies: ['config', 'jwt'] },
)
