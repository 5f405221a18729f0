import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { resolveCaller, type Access, type Credentials } from '../src/auth/callers.js'
import { contextFor, type Ctx } from '../src/context.js'
import { unauthorized } from '../src/errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route (src/auth/callers.ts): every route declares it. */
    access?: Access
  }
  interface FastifyRequest {
    /** The caller and the process's infrastructure, for domain code (set on every route with access). */
    ctx: Ctx
  }
}

const header = (request: FastifyRequest, name: string) => {
  const v = request.headers[name]
  return typeof v === 'string' && v !== '' ? v : undefined
}

/**
 * The credentials of a request: a Bearer member token with its x-workspace-id (read only where
 * members may call), or a visitor session.
 */
function credentialsOf(request: FastifyRequest, access: Exclude<Access, 'public'>): Credentials {
  const h = access.member ? request.headers.authorization : undefined
  let memberToken: string | undefined
  if (h) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
    if (!m) throw unauthorized('Authorization must be a Bearer token')
    memberToken = m[1]
  }
  // A signed link's token is the credential of a request that has none (access `anonymous`).
  const token = access.anonymous ? (request.query as Record<string, unknown> | undefined)?.token : undefined
  return {
    memberToken,
    workspaceId: header(request, 'x-workspace-id'),
    visitorSession: header(request, 'x-visitor-session'),
    linkToken: typeof token === 'string' ? token : undefined,
  }
}

/**
 * Declarative access: every route says who may call it (`config: { access }`) and the app refuses
 * to start with one that does not. The caller is resolved by the rules of src/auth/callers.ts and
 * the request gets its context (`request.ctx`). Routes never read tokens.
 *
 * Order of checks (API.md section 1): the guard is the route's first onRequest hook, so it runs
 * before the body is read, parsed or validated: a caller without valid credentials gets 401
 * (and one without the permission 403) whatever its body, query or `:id`, and learns nothing of
 * the schema (no 400, 413, 415 or 404 first). Only CORS, an application-wide onRequest hook,
 * runs before it, so refusals carry CORS headers.
 */
export default fp(
  async (app) => {
    app.decorateRequest('ctx', null as unknown as Ctx)

    function guard(access: Access): onRequestHookHandler {
      return async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
        const caller = await resolveCaller(app.deps, request.log, access, access === 'public' ? {} : credentialsOf(request, access))
        request.ctx = contextFor(app.deps, caller, request.log)
      }
    }

    app.addHook('onRoute', (route) => {
      const access = route.config?.access
      // Every route of ours must say who may call it; only the docs and CORS preflight may not.
      if (access === undefined && !route.url.startsWith('/docs') && route.method !== 'OPTIONS' && route.method !== 'HEAD') {
        throw new Error(`route ${[route.method].flat().join(',')} ${route.url} declares no config.access`)
      }
      if (!access) return
      const existing = route.onRequest ? [route.onRequest].flat() : []
      route.onRequest = [guard(access), ...existing]
    })
  },
  { name: 'auth', dependencies: ['config', 'deps'] },
)
