import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { MemberDirectory, type MemberRecord } from '../src/auth/members.js'
import { can, type Permission } from '../src/auth/permissions.js'
import { createMemberVerifier, createVisitorTokens, IdpUnavailableError, type MemberVerifier, type VisitorTokens } from '../src/auth/tokens.js'
import { AppError, badRequest, forbidden, unauthorized } from '../src/errors.js'

/**
 * Who may call a route, declared on the route itself: `config: { access: ... }`.
 * - 'public': nobody is authenticated (health, bootstrap, public status, webhooks).
 * - { member: permission }: a member of the `x-workspace-id` workspace holding that permission.
 * - { member: permission, visitor: true }: that, or a visitor session (the route then checks
 *   that the visitor owns what it asks for).
 * - { visitor: true }: a visitor session only.
 * - { member: 'any', workspace: false }: any valid member JWT, no workspace (POST/GET /workspaces).
 * Routes never read tokens themselves; they read `request.member` / `request.visitor`.
 */
export type Access =
  | 'public'
  | { member?: Permission | 'any'; visitor?: boolean; workspace?: boolean }

export interface MemberPrincipal {
  userId: string
  /** Claims from the token, for a first membership (POST /workspaces). */
  tokenName?: string
  tokenEmail?: string
  /** Absent only on routes declared with workspace: false. */
  workspaceId: string
  record: MemberRecord
}

export interface VisitorPrincipal {
  guestId: string
  channelId: string
  workspaceId: string
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access
  }
  interface FastifyRequest {
    member?: MemberPrincipal
    /** Set on workspace: false routes, where there is no membership yet. */
    identity?: { userId: string; name?: string; email?: string }
    visitor?: VisitorPrincipal
  }
  interface FastifyInstance {
    memberTokens: MemberVerifier
    visitorTokens: VisitorTokens
    memberDirectory: MemberDirectory
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function bearer(request: FastifyRequest): string | undefined {
  const h = request.headers.authorization
  if (!h) return undefined
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  if (!m) throw unauthorized('Authorization must be a Bearer token')
  return m[1]
}

export default fp(
  async (app) => {
    app.decorate('memberTokens', createMemberVerifier(app.config))
    app.decorate('visitorTokens', createVisitorTokens(app.config))
    app.decorate('memberDirectory', new MemberDirectory(app.db, app.config.MEMBER_CACHE_TTL_MS))
    app.decorateRequest('member', undefined)
    app.decorateRequest('identity', undefined)
    app.decorateRequest('visitor', undefined)

    async function authenticateMember(request: FastifyRequest, token: string, permission: Permission | 'any', workspace: boolean) {
      let claims
      try {
        claims = await app.memberTokens(token)
      } catch (err) {
        if (err instanceof IdpUnavailableError) {
          request.log.warn({ reason: err.message }, 'member token not checked: identity provider unavailable')
          throw new AppError(503, 'IDP_UNAVAILABLE', 'The identity provider is unavailable; retry later', { 'retry-after': '5' })
        }
        request.log.info({ reason: (err as Error).message }, 'member token refused')
        throw unauthorized('Invalid or expired token')
      }
      request.identity = { userId: claims.sub, name: claims.name, email: claims.email }
      if (!workspace) return
      const workspaceId = request.headers['x-workspace-id']
      if (typeof workspaceId !== 'string' || workspaceId === '') {
        throw badRequest('x-workspace-id header is required', 'WORKSPACE_REQUIRED')
      }
      if (!UUID.test(workspaceId)) throw forbidden('Not a member of this workspace', 'NOT_A_MEMBER')
      const record = await app.memberDirectory.get(workspaceId.toLowerCase(), claims.sub)
      if (!record) throw forbidden('Not a member of this workspace', 'NOT_A_MEMBER')
      if (record.status !== 'active') throw forbidden('Membership is disabled', 'MEMBER_DISABLED')
      if (permission !== 'any' && !can(record.role, permission)) {
        throw forbidden(`Missing permission ${permission}`, 'FORBIDDEN')
      }
      request.member = {
        userId: claims.sub,
        tokenName: claims.name,
        tokenEmail: claims.email,
        workspaceId: record.workspaceId,
        record,
      }
    }

    function authenticateVisitor(request: FastifyRequest, token: string) {
      try {
        const c = app.visitorTokens.verify(token)
        request.visitor = { guestId: c.guestId, channelId: c.channelId, workspaceId: c.workspaceId }
      } catch (err) {
        request.log.info({ reason: (err as Error).message }, 'visitor session refused')
        throw unauthorized('Invalid or expired visitor session')
      }
    }

    function guard(access: Exclude<Access, 'public'>): preHandlerHookHandler {
      return async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
        const token = access.member ? bearer(request) : undefined
        if (token && access.member) {
          return authenticateMember(request, token, access.member, access.workspace !== false)
        }
        const session = request.headers['x-visitor-session']
        if (access.visitor && typeof session === 'string' && session !== '') {
          return authenticateVisitor(request, session)
        }
        throw unauthorized()
      }
    }

    app.addHook('onRoute', (route) => {
      const access = route.config?.access
      // Every route of ours must say who may call it; only the docs and CORS preflight may not.
      if (access === undefined && !route.url.startsWith('/docs') && route.method !== 'OPTIONS' && route.method !== 'HEAD') {
        throw new Error(`route ${[route.method].flat().join(',')} ${route.url} declares no config.access`)
      }
      if (!access || access === 'public') return
      const existing = route.preHandler ? (Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]) : []
      route.preHandler = [guard(access), ...existing]
    })
  },
  { name: 'auth', dependencies: ['config', 'db'] },
)

/** The caller's workspace, whichever kind of caller it is. */
export function callerWorkspace(request: FastifyRequest): string {
  const id = request.member?.workspaceId ?? request.visitor?.workspaceId
  if (!id) throw new AppError(500, 'INTERNAL_ERROR', 'route has no authenticated caller')
  return id
}
