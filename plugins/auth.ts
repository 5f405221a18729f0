import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Caller, MemberCaller, VisitorCaller } from '../src/auth/callers.js'
import { can, type Permission } from '../src/auth/permissions.js'
import { contextFor, type Ctx } from '../src/context.js'
import { badRequest, forbidden, unauthorized } from '../src/errors.js'
import { isUuid } from '../src/uuid.js'

/**
 * Who may call a route, declared on the route itself: `config: { access: ... }`.
 * - 'public': nobody is authenticated (health, bootstrap, public status, webhooks).
 * - { member: permission }: a member of the `x-workspace-id` workspace holding that permission.
 * - { member: permission, visitor: true }: that, or a visitor session (the route then checks
 *   that the visitor owns what it asks for).
 * - { visitor: true }: a visitor session only.
 * - { member: 'any', workspace: false }: any valid member JWT, no workspace (POST/GET /workspaces).
 * Routes never read tokens themselves: they pass `request.ctx` (src/context.ts) to domain code.
 */
export type Access =
  | 'public'
  | { member?: Permission | 'any'; visitor?: boolean; workspace?: boolean }

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access
  }
  interface FastifyRequest {
    /** The caller and the process's infrastructure, for domain code (set on every route with access). */
    ctx: Ctx
  }
}

function bearer(request: FastifyRequest): string | undefined {
  const h = request.headers.authorization
  if (!h) return undefined
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  if (!m) throw unauthorized('Authorization must be a Bearer token')
  return m[1]
}

export default fp(
  async (app) => {
    app.decorateRequest('ctx', null as unknown as Ctx)

    async function authenticateMember(request: FastifyRequest, token: string, permission: Permission | 'any', workspace: boolean): Promise<Caller> {
      let claims
      try {
        claims = await app.deps.memberTokens(token)
      } catch (err) {
        request.log.info({ reason: (err as Error).message }, 'member token refused')
        throw unauthorized('Invalid or expired token')
      }
      if (!workspace) return { kind: 'user', userId: claims.sub, name: claims.name, email: claims.email }
      const workspaceId = request.headers['x-workspace-id']
      if (typeof workspaceId !== 'string' || workspaceId === '') {
        throw badRequest('x-workspace-id header is required', 'WORKSPACE_REQUIRED')
      }
      if (!isUuid(workspaceId)) throw forbidden('Not a member of this workspace', 'NOT_A_MEMBER')
      const record = await app.deps.memberDirectory.get(workspaceId.toLowerCase(), claims.sub)
      if (!record) throw forbidden('Not a member of this workspace', 'NOT_A_MEMBER')
      if (record.status !== 'active') throw forbidden('Membership is disabled', 'MEMBER_DISABLED')
      if (permission !== 'any' && !can(record.role, permission)) {
        throw forbidden(`Missing permission ${permission}`, 'FORBIDDEN')
      }
      const member: MemberCaller = {
        kind: 'member',
        workspaceId: record.workspaceId,
        userId: claims.sub,
        role: record.role,
        name: record.name,
        email: record.email,
      }
      return member
    }

    function authenticateVisitor(request: FastifyRequest, token: string): VisitorCaller {
      try {
        const c = app.deps.visitorTokens.verify(token)
        return { kind: 'visitor', guestId: c.guestId, channelId: c.channelId, workspaceId: c.workspaceId }
      } catch (err) {
        request.log.info({ reason: (err as Error).message }, 'visitor session refused')
        throw unauthorized('Invalid or expired visitor session')
      }
    }

    async function callerOf(request: FastifyRequest, access: Access): Promise<Caller> {
      if (access === 'public') return { kind: 'anonymous' }
      const token = access.member ? bearer(request) : undefined
      if (token && access.member) return authenticateMember(request, token, access.member, access.workspace !== false)
      const session = request.headers['x-visitor-session']
      if (access.visitor && typeof session === 'string' && session !== '') return authenticateVisitor(request, session)
      throw unauthorized()
    }

    function guard(access: Access): preHandlerHookHandler {
      return async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
        request.ctx = contextFor(app.deps, await callerOf(request, access), request.log)
      }
    }

    app.addHook('onRoute', (route) => {
      const access = route.config?.access
      // Every route of ours must say who may call it; only the docs and CORS preflight may not.
      if (access === undefined && !route.url.startsWith('/docs') && route.method !== 'OPTIONS' && route.method !== 'HEAD') {
        throw new Error(`route ${[route.method].flat().join(',')} ${route.url} declares no config.access`)
      }
      if (!access) return
      const existing = route.preHandler ? (Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]) : []
      route.preHandler = [guard(access), ...existing]
    })
  },
  { name: 'auth', dependencies: ['config', 'deps'] },
)
